"""Summaries break SPL down by scene family and never average a NaN: an SPL of 0/0 or an empty evaluation
is refused with a message, not reported as "nan ±nan"."""

import math

import numpy as np
import pytest

from navzoo.errors import NavzooError
from navzoo.evaluation import EpisodeResult, format_family_table, format_table, summarize


def result(
    index: int, spl: float, task: str = "pointnav", scene: str = "apartment-s/val/00000", **metrics
) -> EpisodeResult:
    return EpisodeResult(
        episode_index=index,
        episode_id=f"{scene}#{index}",
        scene_id=scene,
        path_length=3.0,
        collisions=0,
        num_steps=12,
        episode_return=1.0,
        positions=np.zeros((13, 2), np.float32),
        headings=np.zeros(13, np.float32),
        actions=np.ones(12, np.int64),
        rewards=np.zeros(12, np.float32),
        task=task,
        geodesic_distance=3.0,
        success=float(spl > 0),
        spl=spl,
        distance_to_goal=0.1,
        **metrics,
    )


def test_valid_results_summarize_as_before():
    summary = summarize([result(0, 0.9), result(1, 0.7), result(2, 0.0)])
    assert math.isclose(summary["spl"], 1.6 / 3) and math.isfinite(summary["spl_ci95"])
    assert "nan" not in format_table({"agent": summary})


def test_success_and_spl_by_scene_family_in_the_families_order():
    scenes = {"office/val/00001": 0.8, "apartment-s/val/00000": 0.5, "office/val/00000": 0.0}
    scenes["data/gibson/Adrian.glb"] = 1.0
    scenes["office/gibson/Adrian.glb"] = 1.0  # a scanned mesh under a folder named like a family
    summary = summarize([result(i, spl, scene=s) for i, (s, spl) in enumerate(scenes.items())])
    families = summary["by_family"]
    assert [(f, r["episodes"], r["spl"], r["success"]) for f, r in families.items()] == [
        ("apartment-s", 1, 0.5, 1.0),
        ("office", 2, 0.4, 0.5),
    ]
    assert summarize([result(0, 0.9, scene="data/gibson/Adrian.glb")])["by_family"] == {}
    table = format_family_table({"agent": summary, "other": summarize([result(0, 0.9)])})
    assert table.splitlines()[3:] == [
        f"{'apartment-s':<12} {'0.50 / 1.00 (1)':>18} {'0.90 / 1.00 (1)':>18}",
        f"{'office':<12} {'0.40 / 0.50 (2)':>18} {'-':>18}",
    ]
    assert format_family_table({"agent": summarize([result(0, 0.9)])}) == ""  # one family: the totals


def test_an_undefined_spl_is_refused_not_averaged_into_nan():
    with pytest.raises(NavzooError, match=r"episode 1 \(episode_id 'apartment-s/val/00000#1'\) has spl=nan"):
        summarize([result(0, 0.9), result(1, math.nan), result(2, 0.5)])


def test_an_undefined_metric_of_a_goalless_task_is_refused():
    results = [
        result(0, 0.0, task="flee", flee_distance=0.4),
        result(1, 0.0, task="flee", flee_distance=math.inf),
    ]
    with pytest.raises(NavzooError, match=r"episode 1 .* has flee_distance=inf"):
        summarize(results)


def test_an_empty_evaluation_is_refused():
    with pytest.raises(NavzooError, match="no episodes to summarize"):
        summarize([])
