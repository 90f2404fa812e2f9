"""stable-baselines3 on the embedded simulator through navzoo.interop.sb3 (the optional sb3 extra)."""

import av
import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.vec_env import VecMonitor, VecVideoRecorder

from navzoo.errors import ConfigError
from navzoo.interop.gym_env import NavEnv
from navzoo.interop.sb3 import NavVecEnv, NavzooFeaturesExtractor
from navzoo.models import GOAL_SENSOR, PolicyConfig
from tests.models.test_models_habitat_baseline import baseline


def test_ppo_trains_a_few_hundred_steps_on_the_batch_simulator_with_navzoo_features():
    env = VecMonitor(NavVecEnv(num_envs=4, resolution=(64, 64), max_episode_steps=40))
    env.seed(3)
    model = PPO(
        "MultiInputPolicy",
        env,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        policy_kwargs={"features_extractor_class": NavzooFeaturesExtractor},
        seed=0,
        device="cpu",
    )
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(512)
    assert model.num_timesteps == 512
    assert len(model.ep_info_buffer) >= 4 * 512 // 4 // 40  # whole episodes, logged by VecMonitor
    after = model.policy.parameters()
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, after, strict=True))
    extractor = model.policy.features_extractor
    assert extractor.features_dim == 256 + 32  # SimpleCNN's visual_fc and the goal embedding


def test_the_vec_env_resets_in_the_step_an_episode_ends_as_sb3_expects():
    env = NavVecEnv(num_envs=2, resolution=(16, 16), max_episode_steps=3)
    env.reset()
    for _ in range(3):
        env.step_async(np.array([2, 2]))
        obs, reward, done, infos = env.step_wait()
    assert done.all() and reward.dtype == np.float32
    assert all(i["TimeLimit.truncated"] and "terminal_observation" in i for i in infos)
    assert set(infos[0]["episode_metrics"]) >= {"success", "spl"}
    assert (env.venv.sim.steps == 0).all() and env.venv.observation_space.contains(obs)


def test_the_single_environment_passes_sb3s_checker():
    check_env(NavEnv(resolution=(16, 16), max_episode_steps=20), warn=False)


def test_vec_video_recorder_records_every_environment(tmp_path):
    """sb3's VecVideoRecorder over get_images (moviepy is in the test extra). Episodes end and others begin
    in other scenes on the way; every frame keeps one size, as a video needs."""
    venv = NavVecEnv(num_envs=2, resolution=(16, 16), max_episode_steps=3, render_mode="rgb_array")
    env = VecVideoRecorder(venv, str(tmp_path), record_video_trigger=lambda step: step == 0, video_length=7)
    env.reset()
    size = env.render().shape
    for _ in range(7):
        env.step(np.array([2, 1]))
    env.close()
    (video,) = tmp_path.glob("*.mp4")
    with av.open(str(video)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) >= 7 and all(f.shape == size for f in frames)
    height, width, _ = venv.get_images()[0].shape
    assert size == (2 * height, width, 3)  # sb3 tiles the two environments' frames


def test_set_options_are_refused_at_the_next_reset_not_ignored():
    env = NavVecEnv(num_envs=2, resolution=(16, 16))
    env.set_options({"start_position": [1.0, 2.0]})
    with pytest.raises(ConfigError, match=r"invalid options=\['start_position'\]: .*no reset options"):
        env.reset()
    env.set_options(None)  # sb3's way to clear them
    assert env.observation_space.contains({k: v[0] for k, v in env.reset().items()})


def test_the_features_extractor_reads_the_seen_map_when_its_config_names_the_cell_size():
    env = NavVecEnv(num_envs=2, resolution=(64, 64), sensors=("depth", "seen_map"), seen_map_size=16)
    with pytest.raises(ConfigError, match="seen_map_size and seen_map_cell"):
        NavzooFeaturesExtractor(env.observation_space)
    config = PolicyConfig(
        backbone="simple_cnn",
        sensors=("depth", "seen_map", GOAL_SENSOR),
        resolution=(64, 64),
        hidden_size=64,
        seen_map_size=16,
        seen_map_cell=0.5,
    )
    extractor = NavzooFeaturesExtractor(env.observation_space, config)
    assert extractor.features_dim == 64 + 256 + 32  # camera, map, goal
    obs = {k: torch.as_tensor(v) for k, v in env.reset().items()}
    assert extractor(obs).shape == (2, 64 + 256 + 32)
    env.close()


def test_the_features_extractor_passes_the_goal_on_raw_in_habitat_s_baseline_layout():
    env = NavVecEnv(num_envs=2, resolution=(64, 64), sensors=("depth",))
    extractor = NavzooFeaturesExtractor(env.observation_space, baseline(("depth",), hidden=64))
    assert extractor.features_dim == 64 + 2  # camera, (rho, phi)
    obs = {k: torch.as_tensor(v) for k, v in env.reset().items()}
    torch.testing.assert_close(extractor(obs)[:, -2:], obs[GOAL_SENSOR])
    env.close()
