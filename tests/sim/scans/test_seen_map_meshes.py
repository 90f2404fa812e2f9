"""The seen_map sensor on scanned meshes (navzoo.sim.scans.seen_map): it agrees with the native sensor on a
native scene exported as a mesh, keeps two storeys' maps apart as the agent climbs the stairs, refuses the
map planner by name, and resumes exactly from a checkpoint."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from navzoo.agents.baselines import OracleAgent, make_baseline
from navzoo.errors import ConfigError
from navzoo.sim import STOP, TURN_LEFT, BatchSim, SimConfig
from navzoo.sim.scenes import CELL_SIZE
from tests.support import steps_after_a_resume_match

from . import meshes

pytestmark = pytest.mark.usefixtures("one_thread", "navmesh_cache")

MAPPED = dict(sensors=("depth", "seen_map"), resolution=(64, 64), seen_map_size=16)
FULL_TURN = round(360 / 10)  # left turns of SimConfig.turn_angle


def turn_around(sim: BatchSim) -> dict[str, torch.Tensor]:
    """Turn every agent once around on the spot; the last observations."""
    for _ in range(FULL_TURN):
        obs, *_ = sim.step(torch.full((sim.num_envs,), TURN_LEFT))
    return obs


def test_the_map_of_an_exported_scene_matches_the_native_one(val_meshes):
    """Turning on the spot, both simulators see the same scene from the same poses. The native map marks
    the cell behind each vertical face it sees; the mesh map marks the cell behind every surface point at
    the agent's height, so it holds every cell the native one does (depth agrees within 1 cm, far below a
    cell), and more of the furniture: the tops of boxes and the cells behind them, solid too. Its one
    possible mistake is a ray that meets a box's vertical edge within PUSH (0.1 mm) of it and is pushed
    into the free cell beside it: at 64 px over 90 degrees a pixel spans centimetres there, so that is a
    few per thousand marked cells at most (none on this scene), and 2% is the bound."""
    mesh = BatchSim(SimConfig(split="val", num_envs=4, **MAPPED, **val_meshes.sim_fields()))
    native = BatchSim(
        SimConfig(split="val", num_envs=4, **MAPPED, episodes_file=str(val_meshes.episodes_file))
    )
    mesh.reset()
    native.reset()
    obs_mesh, obs_native = turn_around(mesh), turn_around(native)
    assert torch.equal(mesh.pos, native.pos) and torch.equal(mesh.heading, native.heading)
    scene = native.pool.assets[0].scene
    assert np.array_equal(mesh.seen_map.origin, np.zeros((4, 2)))  # the exported scene keeps its cells
    assert (mesh.seen_map.shape[:, :2] == scene.shape).all()
    solid = scene.heights > 0
    marked, extra, wrong = 0, 0, 0
    for env in range(4):
        ours, theirs = (
            mesh.seen_map.walls(env),
            native.seen_map.map.solid[env][: scene.shape[0], : scene.shape[1]] > 0,
        )
        assert not (theirs & ~ours).any()  # every cell the native map marks
        marked += ours.sum()
        extra += (ours & ~theirs & solid).sum()
        wrong += (ours & ~solid).sum()
    print(f"\nmesh map: {marked} cells; {extra} solid ones the native map leaves unmarked, {wrong} free")
    assert 0 < extra < marked / 4 and wrong <= 0.02 * marked
    ours, theirs = obs_mesh["seen_map"], obs_native["seen_map"]
    assert ours.shape == theirs.shape == (4, 16, 16, 2)
    assert not (theirs[..., 0] > ours[..., 0]).any()
    assert (ours[..., 0] == theirs[..., 0]).float().mean() >= 0.98  # they differ where the mesh shows more
    assert torch.equal(ours[..., 1], theirs[..., 1])  # the cell each has stood in


@pytest.fixture(scope="module")
def storeys(tmp_path_factory):
    """two_storeys() with one episode from the ground floor at x 1.5 up the stairs to the slab."""
    folder = tmp_path_factory.mktemp("storeys")
    meshes.two_storeys().mesh().export(folder / "storeys.ply")
    episode = ((1.5, 0.0, 2.75), 0.0, (8.5, 2.0, 2.0))
    path = meshes.write_episodes(folder / "episodes.json.gz", "storeys.ply", [episode])
    return {"scenes_dir": str(folder), "episodes_file": str(path)}


def shown_and_held(sim: BatchSim) -> dict[str, tuple[bool, bool]]:
    """For each box of two_storeys(): whether the map shows it at the agent's storey, and whether it holds
    something seen there at all."""
    result = {}
    for name, box in (("ground", meshes.GROUND_BOX), ("upper", meshes.UPPER_BOX)):
        (x0, z0, x1, z1), _ = box
        middle = np.array([(x0 + x1) / 2, -(z0 + z1) / 2])  # floor (x, y) = habitat (x, -z)
        col, row = np.floor((middle - sim.seen_map.origin[0]) / CELL_SIZE).astype(int)
        result[name] = (bool(sim.seen_map.walls(0)[row, col]), bool(sim.seen_map.surfaces[0, row, col].any()))
    return result


def test_two_storeys_keep_their_maps_apart(storeys):
    """Downstairs the agent sees the ground box beside it and the upper box above the slab's edge; its map
    shows the ground box only. It climbs the stairs: upstairs the map shows the upper box and no longer
    the ground box, though it still holds both."""
    sim = BatchSim(SimConfig(split="val", num_envs=1, **MAPPED, **storeys))
    sim.reset()
    obs = turn_around(sim)
    assert shown_and_held(sim) == {"ground": (True, True), "upper": (False, True)}
    oracle = OracleAgent(sim)
    for _ in range(200):  # up to the goal, short of the stop that would begin a new episode
        action = oracle.act(obs, None)
        if action[0] == STOP:
            break
        obs, *_ = sim.step(action)
    assert float(sim.meshes.height[0]) == pytest.approx(2.0, abs=0.05)
    assert shown_and_held(sim) == {"ground": (False, True), "upper": (True, True)}


def test_the_map_planner_is_refused_by_name_on_meshes(val_meshes):
    for sensors in (("depth",), ("depth", "seen_map")):
        sim = BatchSim(SimConfig(split="val", num_envs=1, sensors=sensors, **val_meshes.sim_fields()))
        with pytest.raises(ConfigError, match=r"scenes_dir=.*None for the map planner"):
            make_baseline("map-planner", sim)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Three meshes to train on: a room with boxes, two storeys, a ramp."""
    folder = tmp_path_factory.mktemp("stream")
    meshes.fine_room(8, 0.5).export(folder / "a_room.ply")
    meshes.two_storeys().mesh().export(folder / "b_storeys.ply")
    meshes.ramp(20).mesh().export(folder / "c_ramp.obj")
    return folder


@pytest.mark.parametrize("task", ["pointnav", "flee", "explore"])
def test_resume_with_the_map_on_a_mesh_stream_is_exact(folder, task):
    config = SimConfig(
        task=task,
        scenes_dir=str(folder),
        num_envs=3,
        scenes_in_memory=2,
        episodes_per_scene=2,
        max_episode_steps=5,
        seed=1,
        **{**MAPPED, "resolution": (16, 16)},
    )
    actions = torch.randint(0, 4, (16, 3), generator=torch.Generator().manual_seed(0))
    first = steps_after_a_resume_match(config, actions, checkpoint_after=6)
    assert "seen_map" in first[0][0]
    assert any(bool(d.any()) for _, _, d, _ in first)
    assert any(bool(obs["seen_map"][..., 0].any()) for obs, *_ in first)
    assert math.isfinite(float(torch.stack([r for _, r, _, _ in first]).sum()))
