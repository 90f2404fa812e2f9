"""Imitation on scanned meshes: the shortest-path teacher walks habitat's navmesh (stairs between storeys,
a ramp, furniture) to the goal, and a DAgger run trains on a folder of meshes."""

from __future__ import annotations

import math

import pytest
import torch

from navzoo.errors import ConfigError
from navzoo.sim import BatchSim, SimConfig
from navzoo.train.config import load_config
from navzoo.train.teacher import StraightLineTeacher
from navzoo.train.trainer import train
from tests.sim.scans import meshes

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def navmesh_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NAVZOO_NAVMESH_CACHE", str(tmp_path_factory.getbasetemp() / "navmeshes"))


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    """Meshes in habitat's frame (.ply/.obj are read as y-up): two storeys joined by stairs, a ramp up to
    a platform, a furnished room."""
    folder = tmp_path_factory.mktemp("scenes")
    meshes.stairs(0.15, ceiling=True).mesh().export(folder / "stairs.ply")
    meshes.ramp(20).mesh().export(folder / "ramp.obj")
    meshes.fine_room(8, 0.5).export(folder / "room.ply")
    return folder


def test_the_shortest_path_teacher_reaches_its_goals_on_meshes(scenes):
    sim = BatchSim(SimConfig(split="train", scenes_dir=str(scenes), num_envs=12, sensors=(), seed=3))
    sim.reset()
    teacher = StraightLineTeacher(sim)
    success, spl, scene_ids = [], [], set()
    for _ in range(2000):
        scene_ids.update(sim.meshes.scenes[int(s)].path for s in sim.slot)
        _, _, done, info = sim.step(teacher.labels()[0])
        for env in torch.nonzero(done).flatten().tolist():
            success.append(float(info["episode"]["success"][env]))
            spl.append(float(info["episode"]["spl"][env]))
        if len(success) >= 36:
            break
    sim.close()
    assert len(success) >= 36 and len(scene_ids) == 3
    assert sum(success) / len(success) >= 0.95
    assert sum(spl) / len(spl) >= 0.9


def mesh_run(scenes, teacher: str, frames: int) -> list[str]:
    return [
        f"sim.scenes_dir={scenes}",
        "sim.num_envs=4",
        "sim.resolution=[32,32]",
        "sim.max_episode_steps=40",
        "ppo.num_steps=8",
        "ppo.num_mini_batch=1",
        "policy.hidden_size=16",
        "policy.num_recurrent_layers=1",
        "policy.rnn_type=GRU",
        "algorithm=dagger",
        f"imitation.teacher={teacher}",
        f"total_frames={frames}",
        "checkpoint_every=1",
        "torch_threads=1",
    ]


def test_dagger_trains_on_a_folder_of_meshes_and_resumes(scenes, tmp_path):
    result = train(
        load_config("pointnav-depth-se-resnet9", mesh_run(scenes, "shortest-path", 64)), tmp_path / "run"
    )
    assert result.updates == 2
    assert 0 < result.metrics["loss/teacher_prob"] <= 1
    more = train(
        load_config("pointnav-depth-se-resnet9", mesh_run(scenes, "shortest-path", 96)),
        tmp_path / "run",
        resume=True,
    )
    assert more.updates == 3 and math.isfinite(more.metrics["loss/action"])
    assert more.metrics["perf/teacher_fraction"] > 0


def test_the_map_planner_teacher_is_refused_on_meshes_by_name(scenes):
    with pytest.raises(ConfigError, match=r"imitation\.teacher.*shortest-path"):
        load_config("pointnav-depth-se-resnet9", mesh_run(scenes, "map-planner", 64))
