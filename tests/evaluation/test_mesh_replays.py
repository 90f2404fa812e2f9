"""Replays of episodes on scanned meshes: a two-storey house the tests build, evaluated with the oracle,
saved, loaded and re-rendered to exactly what the agent saw; the floor of every pose, the scenes folder
moved to another place, and the clear error when the mesh has gone."""

import dataclasses
import gzip
import json
import shutil

import numpy as np
import pytest
import torch

from navzoo.agents.baselines import make_baseline
from navzoo.errors import ReplayError
from navzoo.evaluation import evaluate
from navzoo.evaluation.replay import (
    load_replay,
    make_replay,
    relocate_replay,
    render_replay,
    render_replay_frame,
    save_replay,
)
from navzoo.evaluation.replay_view import ReplayView
from navzoo.evaluation.topdown import NAVIGABLE
from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.config import MOVE_FORWARD
from tests.evaluation.stairs_house import MESH, UPPER, stairs_house

CAMERAS = {"sensors": ("depth", "rgb"), "resolution": (32, 32)}
GOAL_SENSOR = "pointgoal_with_gps_compass"

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    """The house's SimConfig fields, its navmesh cached beside it for the whole module."""
    folder = tmp_path_factory.mktemp("house")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NAVZOO_NAVMESH_CACHE", str(folder / "navmeshes"))
        yield stairs_house(folder)


class Recorder:
    """The oracle, keeping what each environment saw until its first episode ended."""

    def __init__(self, sim: BatchSim):
        self.oracle, self.frames = make_baseline("oracle", sim), [[] for _ in range(sim.num_envs)]
        self.ended = [False] * sim.num_envs

    def act(self, obs, first):
        for env, frames in enumerate(self.frames):
            self.ended[env] = self.ended[env] or (bool(first[env]) and bool(frames))
            if not self.ended[env]:
                frames.append({key: value[env].clone() for key, value in obs.items()})
        return self.oracle.act(obs, first)


@pytest.fixture(scope="module")
def evaluated(house):
    """Both episodes run side by side: their results, replays and episodes, and what the agent saw."""
    sim = BatchSim(SimConfig(split="val", num_envs=2, **CAMERAS, **house))
    recorder = Recorder(sim)
    results = evaluate(sim, recorder, 2, progress=False)
    replays = [make_replay(sim, result, "oracle") for result in results]
    episodes = sim.episodes
    sim.close()
    return {"results": results, "replays": replays, "frames": recorder.frames, "episodes": episodes}


def test_a_mesh_replay_round_trips_and_rerenders_the_frames_the_agent_saw(evaluated, tmp_path):
    for k, (result, replay) in enumerate(zip(evaluated["results"], evaluated["replays"], strict=True)):
        assert result.success == 1.0
        loaded = load_replay(save_replay(tmp_path / f"episode-{k}.replay.json.gz", replay))
        assert loaded.sim_config == replay.sim_config
        # repr: the file gives no distances, which the episode holds as NaN
        assert repr(loaded.episode) == repr(evaluated["episodes"][k])
        assert loaded.metrics == result.metrics() and loaded.scene_name == MESH
        for name in ("positions", "headings", "heights", "actions", "rewards"):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(result, name), err_msg=name)
        seen = evaluated["frames"][k]
        frames = render_replay(loaded, range(len(seen)))
        assert len(seen) == loaded.num_steps
        for step, observations in enumerate(seen):
            for key in ("depth", "rgb"):
                assert torch.equal(frames[key][step], observations[key]), f"{key} at step {step}"
            # GPS+Compass is the same arithmetic on a batch of another size: equal to its last bit or so
            torch.testing.assert_close(frames[GOAL_SENSOR][step], observations[GOAL_SENSOR])
        assert torch.equal(render_replay_frame(loaded, 0)["depth"], seen[0]["depth"])


def test_the_file_names_the_mesh_inside_the_scenes_folder_with_3d_positions_and_floors(evaluated, tmp_path):
    down = evaluated["replays"][0]
    with gzip.open(save_replay(tmp_path / "down.replay.json.gz", down), "rt") as f:
        data = json.load(f)
    assert data["format_version"] == 2
    assert data["episode"]["scene_id"] == MESH and data["episode"]["start_position"] == UPPER
    heights = data["trajectory"]["heights"]
    assert len(heights) == down.num_steps + 1 and heights[0] == 2.0 and heights[-1] == 0.0  # down a storey
    # the episode is in the replay: no episodes file is needed to rebuild its scene
    assert data["sim_config"]["episodes_file"] is None


def test_the_last_move_of_a_truncated_episode_keeps_its_floor(house, evaluated):
    """The simulator moves an ended episode's agent to its next start at once: the floor its last move
    reached is found on the navmesh, as a longer episode's step reaches it."""
    full = evaluated["results"][0]
    steps = [
        t
        for t in range(1, full.num_steps)
        if full.actions[t - 1] == MOVE_FORWARD and full.heights[t] != full.heights[t - 1]
    ]
    for limit in (steps[0], steps[len(steps) // 2]):  # onto the first stair, and further down
        sim = BatchSim(SimConfig(split="val", num_envs=1, sensors=(), max_episode_steps=limit, **house))
        cut = evaluate(sim, make_baseline("oracle", sim), 1, progress=False)[0]
        sim.close()
        assert cut.num_steps == limit and cut.actions[-1] == MOVE_FORWARD
        np.testing.assert_array_equal(cut.heights, full.heights[: limit + 1])


def test_the_view_draws_the_storey_the_agent_is_on(evaluated):
    down = evaluated["replays"][0]
    view = ReplayView(down)
    upstairs, downstairs = view.map_image(0), view.map_image(down.num_steps)
    floor = [int((image == NAVIGABLE).all(-1).sum()) for image in (upstairs, downstairs)]
    assert floor[0] < floor[1]  # the upper floor is a slab over part of the ground floor
    views = view.observation_images(5)
    assert list(views) == ["depth", "rgb"] and views["depth"].shape == (256, 256, 3)  # 32x32 upscaled 8x
    assert view.frame(down.num_steps).shape == (480, 864, 3)


def test_a_moved_scenes_folder_is_given_and_a_missing_mesh_is_named(house, evaluated, tmp_path):
    path = save_replay(tmp_path / "down.replay.json.gz", evaluated["replays"][0])
    moved = tmp_path / "elsewhere" / "scene_datasets"
    shutil.copytree(house["scenes_dir"], moved)
    here = load_replay(path, scenes_dir=moved)
    assert here.episode.scene_id == str(moved / MESH) and here.sim_config.scenes_dir == str(moved)
    assert torch.equal(render_replay(here, [7])["depth"], render_replay(load_replay(path), [7])["depth"])

    (moved / MESH).unlink()  # the mesh has gone: the replay still reads, and opening it says what to do
    gone = load_replay(path, scenes_dir=moved)
    message = (
        rf"mesh {moved / MESH} \({MESH} in scenes_dir {moved}\), which does not exist: copy .*scenes_dir="
    )
    for opening in (ReplayView, render_replay):
        with pytest.raises(ReplayError, match=message):
            opening(gone)
    # a mesh that was not inside its scenes folder cannot be looked for in another
    other_folder = dataclasses.replace(
        here, sim_config=here.sim_config.replace(scenes_dir=str(tmp_path / "other"))
    )
    climbing_out = dataclasses.replace(
        here, episode=dataclasses.replace(here.episode, scene_id=f"{moved}/../x.ply")
    )
    for outside in (other_folder, climbing_out):
        with pytest.raises(ReplayError, match=r"outside its scenes folder .*open it on a machine that has"):
            relocate_replay(outside, scenes_dir=moved)


def test_replays_of_navzoos_own_scenes_keep_format_version_1(tmp_path):
    sim = BatchSim(SimConfig(split="val", num_envs=1, sensors=(), scene_families=("apartment-s",)))
    result = evaluate(sim, make_baseline("oracle", sim), 1, progress=False)[0]
    sim.close()
    path = save_replay(tmp_path / "own.replay.json.gz", make_replay(sim, result, "oracle"))
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    assert data["format_version"] == 1 and "heights" not in data["trajectory"]
    assert load_replay(path).heights is None and result.heights is None
