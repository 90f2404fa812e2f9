"""stable-baselines3 on the embedded simulator: a VecEnv over one BatchSim and navzoo's encoder as a
features extractor. Needs the optional extra: pip install 'navzoo[sb3]'.

    from stable_baselines3 import PPO
    from navzoo.interop.sb3 import NavVecEnv, NavzooFeaturesExtractor

    env = NavVecEnv(num_envs=16, resolution=(64, 64))
    model = PPO("MultiInputPolicy", env, policy_kwargs={"features_extractor_class": NavzooFeaturesExtractor})
    model.learn(100_000)

The whole batch stays one simulator (sb3's DummyVecEnv of NavEnv would build one simulator per
environment). Episodes reset in the step that ends them, as sb3 expects: the last observation is in
`infos[i]["terminal_observation"]`, the episode's metrics (success, spl, ...) in
`infos[i]["episode_metrics"]`. With render_mode="rgb_array", `get_images` gives each environment's frame
(camera and top-down map), so sb3's render() and VecVideoRecorder work. The simulator takes no
per-environment reset options: options given with sb3's set_options are refused at the next reset, as
NavEnv.reset refuses them, never ignored.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import VecEnv

from navzoo.errors import ConfigError
from navzoo.interop.gym_env import NavVectorEnv, check_reset_options
from navzoo.models.configuration import GOAL_SENSOR, PolicyConfig
from navzoo.models.map_encoder import EMBEDDING_SIZE as MAP_EMBEDDING_SIZE
from navzoo.models.policy import PointNavNet
from navzoo.names import SEEN_MAP
from navzoo.sim.config import SimConfig
from navzoo.zoo.registry import model_entry

DEFAULT_ARCHITECTURE = "pointnav-simple-cnn"  # habitat's SimpleCNN: fast on a CPU


class NavVecEnv(VecEnv):
    """sb3's VecEnv interface over navzoo's gymnasium NavVectorEnv (same-step autoreset)."""

    def __init__(self, config: SimConfig | None = None, **overrides):
        self.venv = NavVectorEnv(config, autoreset_mode=AutoresetMode.SAME_STEP, **overrides)
        super().__init__(
            self.venv.num_envs, self.venv.single_observation_space, self.venv.single_action_space
        )
        # sb3's VecEnv sets only the render modes; VecVideoRecorder reads the frame rate here too.
        self.metadata = {**self.metadata, "render_fps": self.venv.metadata["render_fps"]}
        self._actions = None

    def reset(self):
        for options in self._options:  # set_options' dicts, one per environment
            check_reset_options(options, ())
        # sb3's seed() stores one seed per environment for the next reset; BatchSim takes them as a list.
        seeds = None if all(s is None for s in self._seeds) else [s or 0 for s in self._seeds]
        obs, _ = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions) -> None:
        self._actions = actions

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        done = terminated | truncated
        infos = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(done):
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            metrics = info["final_info"]
            infos[i]["episode_metrics"] = {k: metrics[k][i].tolist() for k in metrics if k[0] != "_"}
        return obs, reward.astype(np.float32), done, infos

    def close(self) -> None:
        self.venv.close()

    def get_images(self) -> list[np.ndarray | None]:
        """Each environment's frame for sb3's render() and VecVideoRecorder (None without a render_mode)."""
        frames = self.venv.render()
        return [None] * self.num_envs if frames is None else list(frames)

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.venv, attr_name)] * self._count(indices)

    def set_attr(self, attr_name, value, indices=None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result] * self._count(indices)

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * self._count(indices)

    def _count(self, indices) -> int:
        """How many environments sb3's `indices` name (None: all; an int; or any iterable of ints)."""
        return len(list(self._get_indices(indices)))


class NavzooFeaturesExtractor(BaseFeaturesExtractor):
    """navzoo's visual encoder with its visual_fc, next to the seen_map's encoder and the goal embedding:
    what PointNavNet feeds its recurrent layer, for sb3's policies. The architecture is `policy_config`, by
    default habitat's SimpleCNN on the cameras and resolution of the observation space (a space with a
    seen_map needs a `policy_config` naming its cell size)."""

    def __init__(self, observation_space, policy_config: PolicyConfig | None = None, seed: int | None = None):
        if policy_config is None:
            policy_config = _config_for(observation_space)
        if seed is not None:
            torch.manual_seed(seed)
        net = PointNavNet(policy_config)
        visual = policy_config.hidden_size if net.visual_encoder is not None else 0
        seen_map = MAP_EMBEDDING_SIZE if net.map_encoder is not None else 0
        goal_embedding = net.tgt_embeding if GOAL_SENSOR in policy_config.sensors else None
        # PointNavBaselineNet's layout (policy_config.net="baseline") passes the reading on raw.
        raw_goal = net.raw_goal and GOAL_SENSOR in policy_config.sensors
        goal = 2 if raw_goal else 0 if goal_embedding is None else goal_embedding.out_features
        super().__init__(observation_space, features_dim=visual + seen_map + goal)
        self.raw_goal = raw_goal
        self.visual_encoder, self.visual_fc = net.visual_encoder, net.visual_fc
        self.map_encoder = net.map_encoder
        self.tgt_embeding = goal_embedding

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        parts = []
        if self.visual_encoder is not None:
            assert self.visual_fc is not None  # PointNavNet builds them together
            parts.append(self.visual_fc(self.visual_encoder(observations)))
        if self.map_encoder is not None:
            parts.append(self.map_encoder(observations[SEEN_MAP]))
        if self.raw_goal:
            parts.append(observations[GOAL_SENSOR].float())
        if self.tgt_embeding is not None:
            rho, phi = observations[GOAL_SENSOR][:, 0], observations[GOAL_SENSOR][:, 1]
            parts.append(self.tgt_embeding(torch.stack([rho, torch.cos(-phi), torch.sin(-phi)], -1)))
        return torch.cat(parts, 1)


def _config_for(observation_space) -> PolicyConfig:
    if SEEN_MAP in observation_space.spaces:
        raise ConfigError(
            "policy_config",
            None,
            f"a PolicyConfig with seen_map_size and seen_map_cell: the observation space has a {SEEN_MAP}, "
            "whose cell size it does not say",
        )
    sensors = tuple(key for key in ("depth", "rgb", GOAL_SENSOR) if key in observation_space.spaces)
    cameras = [
        observation_space[key].shape[:2] for key in ("depth", "rgb") if key in observation_space.spaces
    ]
    changes = {"sensors": sensors, "hidden_size": 256}
    if cameras:
        changes["resolution"] = tuple(cameras[0])
    return model_entry(DEFAULT_ARCHITECTURE).config.replace(**changes)
