"""Evaluation on scanned meshes: `navzoo eval --episodes-file --scenes-dir --scene-dataset` on navzoo's val
scenes exported as habitat's data folder (run as a real subprocess), its map drawn from the navmesh, and its
replays saved, opened and re-rendered."""

import json
import os
import subprocess
import sys

import matplotlib
import numpy as np
import torch
import yaml
from PIL import Image

from navzoo.agents.baselines import make_baseline
from navzoo.cli.main import main
from navzoo.evaluation import episode_map, evaluate
from navzoo.evaluation.replay import load_replay, make_replay, render_replay
from navzoo.evaluation.replay_view import ReplayView
from navzoo.evaluation.topdown import GOAL, NAVIGABLE, SHORTEST_PATH, START
from navzoo.sim import BatchSim, SimConfig

# The trajectory's colours, from dark to bright with time (its first step lies under the start marker).
TRAJECTORY = (matplotlib.colormaps["plasma"](np.linspace(0.1, 0.9, 64))[:, :3] * 255).astype(int)


def _has_colour(image: np.ndarray, colour) -> bool:
    return bool((np.abs(image.astype(int) - np.array(colour)).sum(-1) < 10).any())


def test_eval_command_runs_on_meshes_and_maps_the_trajectory(val_meshes, navmesh_cache, tmp_path):
    out = tmp_path / "eval"
    cmd = [sys.executable, "-m", "navzoo", "eval", "oracle", "--episodes", "4", "--num-envs", "4"]
    cmd += ["--resolution", "32", "--device", "cpu", "--out", str(out), *val_meshes.options()]
    env = {**os.environ, "NAVZOO_NAVMESH_CACHE": str(navmesh_cache)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "oracle" in proc.stdout and "SPL" in proc.stdout
    assert f"replays {out}/replays/<agent>/" in proc.stdout.splitlines()[-1]
    report = json.loads((out / "eval.json").read_text())
    assert report["config"]["scenes_dir"] == str(val_meshes.scenes_dir)
    summary = report["agents"]["oracle"]["summary"]
    assert summary["episodes"] == 4 and summary["success"] >= 0.75
    entry = report["agents"]["oracle"]
    assert entry["replays"] == [f"replays/oracle/episode-{k}.replay.json.gz" for k in range(3)]  # --replays 3
    replay = load_replay(out / entry["replays"][2])
    assert replay.metrics == entry["episodes"][2] and replay.scene_name == "navzoo/apartment-s/val/00000.glb"
    assert {key: getattr(replay.sim_config, key) for key in ("scenes_dir", "scene_dataset")} == {
        key: str(getattr(val_meshes, key)) for key in ("scenes_dir", "scene_dataset")
    }
    assert replay.heights is not None and len(replay.heights) == replay.num_steps + 1
    depth = render_replay(replay, [0, replay.num_steps])["depth"]
    assert depth.shape == (2, 32, 32, 1) and not torch.equal(depth[0], depth[1])
    with Image.open(out / "map-oracle.png") as png:
        image = np.asarray(png.convert("RGB"))
    for colour in (NAVIGABLE, SHORTEST_PATH, GOAL, START):
        assert _has_colour(image, colour), colour
    distance = np.abs(image[:, :, None].astype(int) - TRAJECTORY).sum(-1).min(-1)
    assert (distance < 12).sum() > 100  # the trajectory is drawn


def test_episode_maps_follow_the_navmesh_as_the_replay_view_does(val_meshes, navmesh_cache):
    sim = BatchSim(SimConfig(split="val", num_envs=2, sensors=(), **val_meshes.sim_fields()))
    results = evaluate(sim, make_baseline("oracle", sim), 2, progress=False)
    image = episode_map(sim, results[0])
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[0] > 100
    assert _has_colour(image, SHORTEST_PATH) and _has_colour(image, START) and _has_colour(image, GOAL)
    view = ReplayView(make_replay(sim, results[0], "oracle"))
    sim.close()
    end = view.map_image(view.num_steps)
    for colour in (NAVIGABLE, SHORTEST_PATH, GOAL, START):
        assert _has_colour(end, colour), colour
    assert view.view_names() == ["depth (not an input of this blind agent)"]


def test_training_commands_take_the_mesh_options_as_sim_keys(val_meshes, capsys):
    argv = ["train", "pointnav-blind", *val_meshes.options(), "--print-config"]
    assert main(argv) == 0
    sim = yaml.safe_load(capsys.readouterr().out)["sim"]
    assert {key: sim[key] for key in val_meshes.sim_fields()} == val_meshes.sim_fields()
    argv = ["train", "pointnav-blind", "algorithm=dagger", "imitation.teacher=map-planner"]
    assert main([*argv, *val_meshes.options(), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert "invalid imitation.teacher='map-planner'" in err and "sim.scenes_dir" in err
