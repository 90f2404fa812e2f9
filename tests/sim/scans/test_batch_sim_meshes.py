"""BatchSim on scanned meshes (SimConfig.scenes_dir): navzoo's own val scenes exported as habitat scene meshes
and episodes (navzoo.interop.habitat_scenes), run through the mesh scene source and compared with the native
simulator on the same episodes."""

from __future__ import annotations

import gzip
import json

import pytest
import torch

from navzoo.agents.baselines import OracleAgent
from navzoo.errors import ConfigError, EpisodeError, SceneError
from navzoo.interop.habitat_scenes import CONFIG_NAME, SCENES_FOLDER, export_scenes
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import episodes_for, mesh_path

EPISODES = 8
RESOLUTION = (48, 48)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    export_scenes(out, split="val", families=("apartment-s",), count=1, episodes_per_scene=EPISODES)
    return out


@pytest.fixture(autouse=True)
def navmesh_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NAVZOO_NAVMESH_CACHE", str(tmp_path_factory.getbasetemp() / "navmeshes"))


def episodes_file(out) -> str:
    return str(out / "datasets" / "pointnav" / "navzoo" / "v1" / "val" / "val.json.gz")


def simulators(out, **overrides) -> tuple[BatchSim, BatchSim]:
    """The mesh simulator and the native one on the same episodes file."""
    common = dict(split="val", episodes_file=episodes_file(out), num_envs=EPISODES, resolution=RESOLUTION)
    common.update(overrides)
    scenes = out / "scene_datasets"
    mesh = BatchSim(
        SimConfig(scenes_dir=str(scenes), scene_dataset=str(scenes / "navzoo" / CONFIG_NAME), **common)
    )
    return mesh, BatchSim(SimConfig(**common))


def test_depth_matches_the_native_simulator_at_the_same_poses(exported):
    mesh, native = simulators(exported)
    first_mesh, first_native = mesh.reset(), native.reset()
    assert torch.equal(mesh.pos, native.pos) and torch.equal(mesh.heading, native.heading)
    depths = [(first_mesh["depth"], first_native["depth"])]
    for action in (1, 1, 2, 1, 3, 1, 1):  # forward, turns: the mesh agent keeps more clearance from walls
        obs, *_ = mesh.step(torch.full((EPISODES,), action))
        native.pos, native.heading = mesh.pos.clone(), mesh.heading.clone()  # the same poses
        depths.append((obs["depth"], native.observe()["depth"]))
    ours, theirs = (torch.cat(d) for d in zip(*depths, strict=True))
    assert ours.shape == theirs.shape and ours.dtype == torch.float32
    within = ((ours - theirs).abs() * 10 < 0.01).float().mean().item()
    print(f"\ndepth within 1 cm on {within:.4%} of {ours.numel()} pixels")
    assert within >= 0.99


def test_gps_compass_and_geodesic_agree_with_the_native_simulator(exported):
    mesh, native = simulators(exported)
    obs_mesh, obs_native = mesh.reset(), native.reset()
    goal = "pointgoal_with_gps_compass"
    assert torch.allclose(obs_mesh[goal], obs_native[goal], atol=1e-5)
    # habitat's navmesh keeps 0.15 m from walls, the native grid 0.1 m: paths round corners wider.
    ratio = mesh.geodesic / native.geodesic
    print(f"\nstart geodesic mesh / native: {[round(r, 3) for r in ratio.tolist()]}")
    assert bool(((ratio > 0.98) & (ratio < 1.12)).all())


def test_the_oracle_succeeds_on_meshes_as_on_native_scenes(exported):
    results = []
    for sim in simulators(exported, sensors=()):
        agent, obs = OracleAgent(sim), sim.reset()
        first = torch.ones(EPISODES, dtype=torch.bool)
        success = torch.full((EPISODES,), -1.0)
        spl = torch.zeros(EPISODES)
        for _ in range(300):
            obs, _, done, info = sim.step(agent.act(obs, first))
            first = done
            fresh = done & (success < 0)
            if bool(fresh.any()):
                success[fresh] = info["episode"]["success"][fresh]
                spl[fresh] = info["episode"]["spl"][fresh]
            if bool((success >= 0).all()):
                break
        results.append((success, spl))
    (mesh_success, mesh_spl), (native_success, native_spl) = results
    print(
        f"\noracle success mesh {mesh_success.mean():.3f} native {native_success.mean():.3f}; "
        f"SPL mesh {mesh_spl.mean():.3f} native {native_spl.mean():.3f}"
    )
    assert mesh_success.mean() >= 0.85 and native_success.mean() >= 0.85
    assert abs(mesh_spl.mean() - native_spl.mean()) <= 0.1


def test_a_missing_mesh_is_named(exported, tmp_path):
    with pytest.raises(SceneError, match=r"00000\.glb not found"):
        BatchSim(SimConfig(split="val", episodes_file=episodes_file(exported), scenes_dir=str(tmp_path)))


def test_an_episode_off_the_floor_is_refused_before_any_step(exported, tmp_path):
    with gzip.open(episodes_file(exported), "rt") as f:
        data = json.load(f)
    data["episodes"][3]["start_position"] = [-50.0, 0.0, 50.0]
    broken = tmp_path / "broken.json.gz"
    with gzip.open(broken, "wt") as f:
        json.dump(data, f)
    scenes = exported / "scene_datasets"
    episode_id = data["episodes"][3]["episode_id"]
    with pytest.raises(EpisodeError, match=f"episode_id '{episode_id}'.*start .* not on the navigable floor"):
        BatchSim(
            SimConfig(
                split="val",
                episodes_file=str(broken),
                scenes_dir=str(scenes),
                scene_dataset=str(scenes / "navzoo" / CONFIG_NAME),  # y up: habitat's default is z up
            )
        )


def test_config_and_scene_paths_follow_habitat():
    assert mesh_path("data/scene_datasets/gibson/Adrian.glb", "/d") == "/d/gibson/Adrian.glb"
    assert mesh_path("gibson/Adrian.glb", "data/scene_datasets") == "data/scene_datasets/gibson/Adrian.glb"
    assert mesh_path("/abs/x.glb", "/d") == "/abs/x.glb"
    with pytest.raises(ConfigError, match="episodes_file"):  # a fixed split's episodes come from a file
        episodes_for(SimConfig(scenes_dir="data/scene_datasets", split="val"))
    with pytest.raises(ConfigError, match="scene_dataset"):
        SimConfig(scene_dataset="x.scene_dataset_config.json")
    for task in ("flee", "explore"):  # a task without a goal runs from the episodes' starts
        assert SimConfig(scenes_dir="d", episodes_file="e.json.gz", task=task, sensors=("depth", "seen_map"))
    assert SCENES_FOLDER.parts[0] == "scene_datasets"
