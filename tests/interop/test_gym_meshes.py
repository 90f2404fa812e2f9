"""The gymnasium environments on scanned meshes: SimConfig's scenes_dir and scene_dataset as make / make_vec
keyword arguments, stepping and the rgb_array render with a map drawn from the navmesh, for PointNav, Flee
and Explore."""

import gymnasium
import numpy as np
import pytest

import navzoo  # noqa: F401  (registers the environments)
from navzoo.errors import ConfigError
from navzoo.evaluation.topdown import NAVIGABLE, START

ENV_ID = "navzoo/PointNav-v0"


def _has_colour(image: np.ndarray, colour) -> bool:
    return bool((np.abs(image.astype(int) - np.array(colour)).sum(-1) < 10).any())


def test_make_steps_and_renders_scanned_meshes(val_meshes, navmesh_cache):
    env = gymnasium.make(
        ENV_ID, split="val", resolution=(32, 32), render_mode="rgb_array", **val_meshes.sim_fields()
    )
    obs, _ = env.reset(seed=0)
    assert obs["depth"].shape == (32, 32, 1) and obs["pointgoal_with_gps_compass"].shape == (2,)
    for action in (1, 1, 2, 1):
        obs, reward, _, _, info = env.step(action)
    assert np.isfinite(reward) and "distance_to_goal" in info
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape[0] == 256
    assert _has_colour(frame, NAVIGABLE) and _has_colour(frame, START)
    env.close()


def test_make_vec_renders_every_environment_on_meshes(val_meshes, navmesh_cache):
    envs = gymnasium.make_vec(
        ENV_ID,
        num_envs=2,
        vectorization_mode="vector_entry_point",
        split="val",
        sensors=(),
        render_mode="rgb_array",
        **val_meshes.sim_fields(),
    )
    envs.reset(seed=0)
    envs.step(np.ones(2, dtype=np.int64))
    frames = envs.render()
    assert len(frames) == 2 and all(_has_colour(frame, NAVIGABLE) for frame in frames)
    envs.close()


def test_mesh_keywords_are_checked_by_name(val_meshes):
    with pytest.raises(ConfigError, match="episodes_file"):  # the val split's episodes are fixed
        gymnasium.make(ENV_ID, scenes_dir=str(val_meshes.scenes_dir), split="val")
    with pytest.raises(ConfigError, match="scene_dataset"):
        gymnasium.make(ENV_ID, scene_dataset="x.json")


@pytest.mark.parametrize(
    ("env_id", "metric"), [("navzoo/Flee-v0", "flee_distance"), ("navzoo/Explore-v0", "visited_cells")]
)
def test_flee_and_explore_step_and_render_on_meshes(val_meshes, navmesh_cache, env_id, metric):
    env = gymnasium.make(
        env_id,
        split="val",
        resolution=(32, 32),
        sensors=("depth", "seen_map"),
        seen_map_size=8,
        render_mode="rgb_array",
        **val_meshes.sim_fields(),
    )
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"depth", "seen_map"} and obs["seen_map"].shape == (8, 8, 2)
    for action in (1, 1, 2, 1):
        obs, reward, _, _, info = env.step(action)
        assert env.observation_space.contains(obs)
    assert np.isfinite(reward) and info[metric] >= 0
    frame = env.render()
    assert frame.dtype == np.uint8 and _has_colour(frame, NAVIGABLE) and _has_colour(frame, START)
    env.close()
