"""The hard meshes of the scanned-scene backend, end to end through BatchSim: each one loads, an agent
that follows the geodesic (the oracle baseline) reaches a goal on it, with depth rendered on the way, or
the simulator refuses it with a message naming the file and the fix."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from navzoo.agents.baselines import OracleAgent
from navzoo.errors import EpisodeError
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.train.teacher import StraightLineTeacher

from . import meshes
from .meshes import Builder


@pytest.fixture(autouse=True)
def navmesh_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NAVZOO_NAVMESH_CACHE", str(tmp_path_factory.getbasetemp() / "navmeshes"))


def open_top_room() -> Builder:
    scene = Builder().floor(0, 6, 0, 4, 0.0)
    for corner, along, normal in (
        ((0, 0, 0), (6, 0, 0), (0, 0, 1)),
        ((0, 0, 4), (6, 0, 0), (0, 0, -1)),
        ((0, 0, 0), (0, 0, 4), (1, 0, 0)),
        ((6, 0, 0), (0, 0, 4), (-1, 0, 0)),
    ):
        scene.quad(corner, along, (0, 2.5, 0), normal)
    return scene.box((2.5, 0, 1), (3.5, 1, 3))  # a block between start and goal


def messy_room() -> Builder:
    """A furnished box room with every triangle twice, a zero-area one and one collapsed to a point."""
    scene = meshes.box_room(6, 4, 2.5).box((2.5, 0, 1), (3.5, 1, 3))
    scene.triangles += list(scene.triangles)
    scene.triangles.append(np.array([[1, 0, 1], [2, 0, 1], [3, 0, 1]], float))
    scene.triangles.append(np.array([[1, 1, 1], [1, 1, 1], [1, 1, 1]], float))
    return scene


def inside_out_room() -> Builder:
    scene = meshes.box_room(6, 4, 2.5).box((2.5, 0, 1), (3.5, 1, 3))
    scene.triangles = [t[::-1] for t in scene.triangles]
    return scene


# name: (scene, start, goal, the goal's floor height), in habitat's frame (y up)
CASES = {
    "stairs": (meshes.stairs(0.15, ceiling=True), (1.0, 0.0, 3.0), (8.0, 2.0, 2.0), 2.0),
    # From under the upper floor, facing the stairs' side, two steps up and more: the way is round to their
    # foot (an agent that took the side for floor within reach would walk into it).
    "stairs_from_below": (meshes.two_storeys(), (8.025, 0.0, 2.225), (9.175, 2.0, 1.425), 2.0),
    # Risers of 0.22 m, above the 0.2 m climb: Recast compares heights in 0.2 m steps and links these, so the
    # agent climbs them (and a follower must not refuse them for their real height).
    "steep_stairs": (meshes.stairs(0.22, ceiling=True), (1.0, 0.0, 3.0), (8.0, 2.0, 2.0), 2.0),
    "ramp": (meshes.ramp(20), (1.0, 0.0, 2.0), (11.0, 1.0, 1.5), 1.0),
    "holed_floor": (meshes.holed_floor(), (1.0, 0.0, 3.0), (5.0, 0.0, 3.0), 0.0),
    "slanted_wall": (meshes.leaning_room(), (5.0, 0.0, 2.0), (1.3, 0.0, 2.0), 0.0),
    "no_ceiling": (open_top_room(), (1.0, 0.0, 2.0), (5.0, 0.0, 2.0), 0.0),
    "degenerate_and_duplicate": (messy_room(), (1.0, 0.0, 2.0), (5.0, 0.0, 2.0), 0.0),
    "inside_out": (inside_out_room(), (1.0, 0.0, 2.0), (5.0, 0.0, 2.0), 0.0),
}


START_YAW = {"stairs_from_below": 1.0}  # radians; 0 for the others


@pytest.mark.parametrize("name", list(CASES))
def test_the_oracle_reaches_the_goal_on_a_hard_mesh(name, tmp_path):
    scene, start, goal, goal_height = CASES[name]
    scene.mesh().export(tmp_path / f"{name}.ply")
    config = SimConfig(
        split="val",
        episodes_file=str(
            meshes.write_episodes(
                tmp_path / "episodes.json.gz", f"{name}.ply", [(start, START_YAW.get(name, 0.0), goal)]
            )
        ),
        scenes_dir=str(tmp_path),
        num_envs=1,
        sensors=("depth",),
        resolution=(32, 32),
    )
    if name == "inside_out":
        with pytest.warns(UserWarning, match="inside-out"):
            sim = BatchSim(config)
    else:
        sim = BatchSim(config)
    agent, obs = OracleAgent(sim), sim.reset()
    start_geodesic = float(sim.geodesic_distance(sim.pos)[0])
    straight = math.dist(start, goal)
    first, seen = torch.ones(1, dtype=torch.bool), False
    for _ in range(300):
        depth = obs["depth"]
        assert bool(((depth >= 0) & (depth <= 1)).all())
        seen |= bool((depth > 0).any())  # open scenes have poses that see nothing: misses read 0
        height = float(sim.meshes.height[0])
        obs, _, done, info = sim.step(agent.act(obs, first))
        first = done
        if bool(done[0]):
            break
    sim.close()
    assert seen and bool(done[0]) and float(info["episode"]["success"][0]) == 1.0, name
    assert float(info["episode"]["spl"][0]) > 0.8, name
    assert height == pytest.approx(goal_height, abs=0.1), name  # on the goal's storey at the end
    assert start_geodesic >= straight - 0.05, name
    if name in ("stairs", "holed_floor", "no_ceiling", "degenerate_and_duplicate", "inside_out"):
        assert start_geodesic > straight + 0.2, name  # the way goes round the stairs, hole or block


def test_a_wrongly_oriented_stage_is_refused_naming_its_stage_config(tmp_path):
    """A y-up room saved as .glb without a stage config: habitat reads a bare .glb as z-up, so the room
    stands on its side (a wall is its floor) and no episode starts on its floor."""
    meshes.box_room(4, 3, 2.5).mesh().export(tmp_path / "room.glb")
    config = SimConfig(
        split="val",
        episodes_file=str(
            meshes.write_episodes(tmp_path / "episodes.json.gz", "room.glb", [((1, 0, 1), 0.0, (3, 0, 2))])
        ),
        scenes_dir=str(tmp_path),
        num_envs=1,
        sensors=(),
    )
    refusal = r"room\.glb, and no episode .* up \[0\.0, 0\.0, 1\.0\].*room\.stage_config\.json"
    with pytest.raises(EpisodeError, match=refusal):
        BatchSim(config)
    (tmp_path / "room.stage_config.json").write_text(json.dumps({"up": [0, 1, 0], "front": [0, 0, -1]}))
    BatchSim(config).close()


@pytest.mark.parametrize("name", ["stairs", "stairs_from_below", "steep_stairs"])
def test_the_straight_line_teacher_climbs_to_the_storey_above(name, tmp_path):
    """The imitation teacher's labels on meshes (its tensor version) walk up the stairs too. From under the
    upper floor, the goal above is in line of sight on the floor plan alone: the teacher must see that its
    way is round by the stairs, not turn on the spot beneath it."""
    scene, start, goal, goal_height = CASES[name]
    scene.mesh().export(tmp_path / f"{name}.ply")
    episodes = meshes.write_episodes(
        tmp_path / "episodes.json.gz", f"{name}.ply", [(start, START_YAW.get(name, 0.0), goal)]
    )
    config = SimConfig(
        split="val", episodes_file=str(episodes), scenes_dir=str(tmp_path), num_envs=1, sensors=()
    )
    sim = BatchSim(config)
    teacher = StraightLineTeacher(sim)
    sim.reset()
    for _ in range(300):
        _, _, done, info = sim.step(teacher.actions())
        if bool(done[0]):
            break
    sim.close()
    assert bool(done[0]) and float(info["episode"]["success"][0]) == 1.0, name
    assert float(info["episode"]["height"][0]) == pytest.approx(goal_height, abs=0.1), name
