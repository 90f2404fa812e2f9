"""The Gymnasium adapters."""

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

import navzoo  # noqa: F401 - registers the navzoo/* environment ids
from navzoo.sim import SimConfig
from navzoo.sim.gym_env import NavEnv, NavVectorEnv


def test_single_env_passes_gymnasium_checker():
    env = NavEnv(SimConfig(resolution=(32, 32), sensors=("depth", "rgb"), max_episode_steps=30))
    check_env(env, skip_render_check=True)


def test_registered_ids_make_all_three_tasks():
    for name, keys in (
        ("PointNav", {"depth", "pointgoal_with_gps_compass"}),
        ("Flee", {"depth"}),
        ("Explore", {"depth"}),
    ):
        env = gymnasium.make(f"navzoo/{name}-v0", resolution=(16, 16))
        obs, _ = env.reset(seed=0)
        assert set(obs) == keys
        assert env.observation_space.contains(obs)
        env.close()


def test_vector_env_autoresets_in_the_same_step_and_returns_final_observations():
    env = NavVectorEnv(SimConfig(num_envs=3, resolution=(16, 16), max_episode_steps=4))
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    for _step in range(4):
        obs, _reward, terminated, truncated, infos = env.step(np.full(3, 2))
    assert truncated.all() and not terminated.any()
    assert infos["_final_obs"].all()
    assert env.single_observation_space.contains(infos["final_obs"][0])
    assert set(infos["episode_metrics"]) >= {"success", "spl", "path_length"}
    assert env.observation_space.contains(obs)
    env.close()
