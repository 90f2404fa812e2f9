"""Flee and Explore on scanned meshes: fixed episodes from a habitat PointNav file (their starts, not their
goals), training streams sampled on a folder of meshes, storeys counted apart, and `navzoo eval --task`."""

from __future__ import annotations

import json

import pytest
import torch

from navzoo.cli.main import main
from navzoo.errors import EpisodeError
from navzoo.sim import MOVE_FORWARD, TURN_LEFT, BatchSim, SimConfig

from . import meshes

pytestmark = pytest.mark.usefixtures("one_thread", "navmesh_cache")

BLIND = dict(sensors=(), max_episode_steps=200)


def walk(sim: BatchSim, steps: int, seed: int = 0) -> tuple[torch.Tensor, dict]:
    """Mostly forward, sometimes a turn, never stop: (the summed rewards [N], the last step's metrics)."""
    generator = torch.Generator().manual_seed(seed)
    total = torch.zeros(sim.num_envs)
    for _ in range(steps):
        turn = torch.rand(sim.num_envs, generator=generator) < 0.2
        _, reward, _, info = sim.step(torch.where(turn, TURN_LEFT, MOVE_FORWARD))
        total += reward
    return total, info["metrics"]


def test_flee_on_an_exported_scene_measures_from_the_start_like_the_native_one(val_meshes):
    mesh = BatchSim(SimConfig(task="flee", split="val", num_envs=4, **BLIND, **val_meshes.sim_fields()))
    native = BatchSim(
        SimConfig(task="flee", split="val", num_envs=4, **BLIND, episodes_file=str(val_meshes.episodes_file))
    )
    mesh.reset()
    native.reset()
    assert torch.equal(mesh.pos, native.pos)  # the episodes' starts
    assert (mesh.geodesic_distance(mesh.pos) < 0.05).all()  # distances are measured from there
    # Max(s_0), the farthest the scene reaches from the start: habitat's navmesh keeps 0.10-0.15 m from
    # walls, where the native grid's paths may pass 0.0375 m from one, so its paths round corners wider (as
    # PointGoal's geodesics, a few per cent).
    scale = mesh.meshes.field_max[mesh.field] / native.pool.field_max[native.field]
    print(f"\nMax(s_0) mesh / native: {[round(r, 3) for r in scale.tolist()]}")
    assert bool(((scale > 0.95) & (scale < 1.15)).all())
    start = mesh.pos.clone()
    total, metrics = walk(mesh, 40)
    flee = metrics["flee_distance"]
    assert torch.allclose(total, 5 * flee, atol=1e-4)  # reward 5 (D_t - D_t-1) sums to 5 D_T
    assert bool(((flee >= 0) & (flee <= 1)).all()) and bool((flee > 0).any())
    distance = mesh.geodesic_distance(mesh.pos)
    assert torch.allclose(flee, distance / mesh.meshes.field_max[mesh.field])
    assert bool((distance >= (mesh.pos - start).norm(dim=1) - 0.05).all())  # no shorter than the line


@pytest.fixture(scope="module")
def storeys(tmp_path_factory):
    """two_storeys() in a scenes folder, with a habitat episodes file whose goals are off the floor."""
    folder = tmp_path_factory.mktemp("storeys")
    meshes.two_storeys().mesh().export(folder / "storeys.ply")
    off_floor = (-20.0, 0.0, 20.0)
    episodes = [((8.0, 0.0, 2.0), 0.0, off_floor), ((8.0, 2.0, 2.0), 1.0, off_floor)]
    return folder, meshes.write_episodes(folder / "episodes.json.gz", "storeys.ply", episodes)


@pytest.mark.parametrize("task", ["flee", "explore"])
def test_tasks_without_a_goal_take_the_start_and_ignore_the_goal(storeys, task):
    folder, episodes = storeys
    fields = dict(split="val", num_envs=2, scenes_dir=str(folder), episodes_file=str(episodes), **BLIND)
    sim = BatchSim(SimConfig(task=task, **fields))
    sim.reset()
    assert sim.pos.tolist() == [[8.0, -2.0], [8.0, -2.0]]  # one column, two storeys
    assert sim.meshes.height.tolist() == pytest.approx([0.0, 2.0], abs=0.05)
    with pytest.raises(EpisodeError, match=r"episode_id '0'.*goal .* not on the navigable floor"):
        BatchSim(SimConfig(task="pointnav", **fields))


def test_explore_counts_visited_cells_and_each_storey_apart(storeys, val_meshes):
    folder, episodes = storeys
    sim = BatchSim(
        SimConfig(
            task="explore", split="val", num_envs=2, scenes_dir=str(folder), episodes_file=str(episodes)
        )
    )
    sim.reset()
    _, _, _, info = sim.step(torch.full((2,), TURN_LEFT))
    # The same square of the floor on two storeys: two cells.
    assert info["metrics"]["visited_cells"].tolist() == [1.0, 1.0]
    assert sim.visited[0, 0] != sim.visited[1, 0] and (sim.visited[:, 1:] == -1).all()
    mesh = BatchSim(SimConfig(task="explore", split="val", num_envs=4, **BLIND, **val_meshes.sim_fields()))
    mesh.reset()
    total, metrics = walk(mesh, 60)
    visited = metrics["visited_cells"]
    assert torch.allclose(visited, 1 + total / 0.25)  # 0.25 for each cell after the first
    assert bool((visited >= 2).all()) and visited.max() > 4  # every agent left its first cell
    for keys, count in zip(mesh.visited, visited.long().tolist(), strict=True):
        assert len(set(keys[:count].tolist())) == count and (keys[count:] == -1).all()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train")
    meshes.fine_room(8, 0.5).export(folder / "a_room.ply")
    meshes.two_storeys().mesh().export(folder / "b_storeys.ply")
    return folder


def test_flee_and_explore_train_on_a_folder_of_meshes(folder):
    stream = dict(scenes_dir=str(folder), num_envs=4, scenes_in_memory=2, seed=5, **BLIND)
    runs = []
    for _ in range(2):
        sim = BatchSim(SimConfig(task="flee", **stream))
        sim.reset()
        # Flee starts at the sampled episode's goal, where its distance field is measured from.
        assert (sim.geodesic_distance(sim.pos) < 0.05).all() and (sim.meshes.field_max > 1).all()
        total, metrics = walk(sim, 30)
        assert torch.allclose(total, 5 * metrics["flee_distance"], atol=1e-4)
        runs.append(sim.pos.clone())
    assert torch.equal(*runs)  # the stream is reproducible
    sim = BatchSim(SimConfig(task="explore", **stream))
    sim.reset()
    total, metrics = walk(sim, 30)
    assert torch.allclose(metrics["visited_cells"], 1 + total / 0.25)
    assert bool((metrics["visited_cells"] >= 1).all())


@pytest.mark.parametrize(("task", "metric"), [("flee", "flee_distance"), ("explore", "visited_cells")])
def test_eval_command_runs_goalless_tasks_on_meshes(val_meshes, tmp_path, task, metric):
    out = tmp_path / "eval"
    argv = ["eval", "--task", task, "--episodes", "4", "--num-envs", "4", "--resolution", "16"]
    argv += ["--replays", "0", "--threads", "1", "--out", str(out), *val_meshes.options()]
    assert main(argv) == 0
    report = json.loads((out / "eval.json").read_text())
    assert set(report["agents"]) == {"random", "forward-only"}
    for agent in report["agents"].values():
        summary = agent["summary"]
        assert summary["episodes"] == 4 and summary[metric] >= 0
