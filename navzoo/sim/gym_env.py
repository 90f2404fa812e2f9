"""Gymnasium adapters so that other RL libraries can train on the embedded simulator.

``NavVectorEnv`` is a gymnasium VectorEnv over one BatchSim (same-step autoreset, like habitat's vector
env: the observation of a finished environment is the first of its next episode and the last one is in
``infos["final_obs"]``). ``NavEnv`` is a single environment for code written against gymnasium.Env.
Observations are numpy arrays with the BatchSim's keys, shapes and dtypes.
"""

from typing import ClassVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import ACTION_NAMES, SimConfig
from navzoo.tasks import get_task


def observation_space(config: SimConfig) -> spaces.Dict:
    height, width = config.resolution
    parts = {}
    if "depth" in config.sensors:
        parts["depth"] = spaces.Box(0.0, 1.0, (height, width, 1), np.float32)
    if "rgb" in config.sensors:
        parts["rgb"] = spaces.Box(0, 255, (height, width, 3), np.uint8)
    if get_task(config.task).has_goal:
        low = np.array([0.0, -np.pi], dtype=np.float32)
        high = np.array([np.finfo(np.float32).max, np.pi], dtype=np.float32)
        parts["pointgoal_with_gps_compass"] = spaces.Box(low, high, (2,), np.float32)
    return spaces.Dict(parts)


def _to_numpy(obs: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    return {key: value.cpu().numpy() for key, value in obs.items()}


def _episode_info(info: dict, done: torch.Tensor) -> dict:
    out = {"collided": info["collided"].cpu().numpy(), "truncated": info["truncated"].cpu().numpy()}
    if "episode" in info:
        out["episode_metrics"] = {k: v.cpu().numpy() for k, v in info["episode"].items()}
        out["_episode_metrics"] = done.cpu().numpy()
    return out


class NavVectorEnv(VectorEnv):
    metadata: ClassVar[dict] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, config: SimConfig):
        self.sim = BatchSim(config)
        self.num_envs = config.num_envs
        self.single_observation_space = observation_space(config)
        self.single_action_space = spaces.Discrete(len(ACTION_NAMES))
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        obs = self.sim.reset(seed=seed)
        return _to_numpy(obs), {}

    def step(self, actions):
        actions = torch.as_tensor(np.asarray(actions), device=self.sim.device)
        obs, reward, done, info = self.sim.step(actions)
        terminated = (done & ~info["truncated"]).cpu().numpy()
        truncated = info["truncated"].cpu().numpy()
        infos = _episode_info(info, done)
        if bool(done.any()):
            infos["final_obs"] = _final_observations(self.sim, info, done)
            infos["_final_obs"] = done.cpu().numpy()
        return _to_numpy(obs), reward.cpu().numpy(), terminated, truncated, infos

    def close_extras(self, **kwargs):
        self.sim.close()


def _final_observations(sim: BatchSim, info: dict, done: torch.Tensor) -> np.ndarray:
    """Last observation of each finished episode, rendered at the pose where it ended."""
    finished = torch.nonzero(done).squeeze(1)
    pos, heading = sim.pos.clone(), sim.heading.clone()
    sim.pos[finished] = info["episode"]["position"][finished]
    sim.heading[finished] = info["episode"]["heading"][finished]
    last = _to_numpy(sim.observe(finished))
    sim.pos, sim.heading = pos, heading
    final = np.empty(sim.num_envs, dtype=object)
    for j, i in enumerate(finished.tolist()):
        final[i] = {key: value[j] for key, value in last.items()}
    return final


class NavEnv(gym.Env):
    """One environment: a BatchSim of size 1 behind the gymnasium.Env interface."""

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, config: SimConfig | None = None, **overrides):
        config = (config or SimConfig(resolution=(64, 64))).replace(num_envs=1, **overrides)
        self.sim = BatchSim(config)
        self.observation_space = observation_space(config)
        self.action_space = spaces.Discrete(len(ACTION_NAMES))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        obs = self.sim.reset(seed=seed)  # without a seed: the next episode of this environment's stream
        return {k: v[0] for k, v in _to_numpy(obs).items()}, {}

    def step(self, action):
        if not self.action_space.contains(int(action)):
            raise gym.error.InvalidAction(f"action must be one of 0..3 {ACTION_NAMES}, got {action!r}")
        # The batch resets itself at episode end; report the ended episode's last observation instead.
        obs, reward, done, info = self.sim.step(torch.tensor([int(action)], device=self.sim.device))
        observation = {k: v[0] for k, v in _to_numpy(obs).items()}
        step_info = {"collided": bool(info["collided"][0])}
        if bool(done[0]):
            observation = _final_observations(self.sim, info, done)[0]
            step_info.update({k: v[0].tolist() for k, v in info["episode"].items()})
        truncated = bool(info["truncated"][0])
        return observation, float(reward[0]), bool(done[0]) and not truncated, truncated, step_info
