"""Top-down maps, the `navzoo eval` command (run as a real subprocess) and the command line's parsing."""

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from navzoo.agents.baselines import make_baseline
from navzoo.cli.main import main
from navzoo.evaluation import episode_map, evaluate
from navzoo.evaluation.topdown import GOAL, SHORTEST_PATH, START
from navzoo.sim import BatchSim, SimConfig


def _has_colour(image: np.ndarray, colour) -> bool:
    return bool((np.abs(image.astype(int) - np.array(colour)).sum(-1) < 10).any())


def test_episode_map_shows_path_trajectory_start_and_goal():
    sim = BatchSim(SimConfig(split="val", num_envs=2, sensors=()))
    result = evaluate(sim, make_baseline("goal-follower", sim), 2, progress=False)[1]
    image = episode_map(sim, result)
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert _has_colour(image, SHORTEST_PATH) and _has_colour(image, START) and _has_colour(image, GOAL)
    assert len(result.positions) == result.num_steps + 1


def test_eval_command_prints_table_and_writes_json_and_maps(tmp_path):
    out = tmp_path / "eval"
    cmd = [
        sys.executable,
        "-m",
        "navzoo.cli.main",
        "eval",
        "goal-follower",
        "oracle",
        "--episodes",
        "6",
        "--num-envs",
        "6",
        "--resolution",
        "32",
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    assert "goal-follower" in proc.stdout and "oracle" in proc.stdout and "SPL" in proc.stdout
    report = json.loads((out / "eval.json").read_text())
    assert report["agents"]["oracle"]["summary"]["episodes"] == 6
    assert report["agents"]["oracle"]["summary"]["success"] == 1.0
    for name in ("goal-follower", "oracle"):
        with Image.open(out / f"map-{name}.png") as image:
            assert image.width > 100 and image.height > 100


def test_eval_command_reports_bad_input_clearly(tmp_path):
    cmd = [sys.executable, "-m", "navzoo.cli.main", "eval", "teleporter", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert "teleporter" in proc.stderr and "oracle" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_episodes_command_writes_habitat_dataset(tmp_path):
    out = tmp_path / "val.json.gz"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "navzoo.cli.main",
            "episodes",
            str(out),
            "--scene-families",
            "apartment-s",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    from navzoo.sim import load_episodes

    assert len(load_episodes(out)) == 6 * 25


def test_train_overrides_may_follow_options(tmp_path, capsys):
    # The override after --run-dir reaches the config: its bad value is reported before any training.
    argv = ["train", "navzoo-pointnav-depth-il", "--run-dir", str(tmp_path / "run"), "total_frames=many"]
    assert main(argv) == 2
    assert "total_frames='many'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "navzoo-pointnav-depth-il", "--run-dir", str(tmp_path / "run"), "stray"])
    assert "unrecognized arguments: stray" in capsys.readouterr().err
