"""Summaries never average a NaN: an SPL of 0/0 or an empty evaluation is refused with a message, not
reported as "nan ±nan"."""

import math

import numpy as np
import pytest

from navzoo.errors import NavzooError
from navzoo.evaluation import EpisodeResult, format_table, summarize


def result(index: int, spl: float, task: str = "pointnav", **metrics) -> EpisodeResult:
    return EpisodeResult(
        episode_index=index,
        episode_id=f"apartment-s/val/00000#{index}",
        scene_id="apartment-s/val/00000",
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
