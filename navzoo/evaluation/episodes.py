"""Run an agent over a split's fixed episodes and record every episode: its task's metrics and trajectory.

An agent is anything with ``act(obs, first) -> actions``; ``first`` marks environments whose episode has
just begun (for recurrent agents to clear their state). An agent that samples its actions may take a third
argument, ``keys`` [N, 2]: the (episode key, step within the episode) of each environment, where the
episode key is a hash of the episode's scene_id and episode_id. It then draws its randomness from
`navzoo.agents.draws.keyed_uniform` of those keys, so every episode gets the same draws whichever
environment runs it, however many there are, and wherever the episode stands in its list (the demo
replays one episode alone).

An agent may also set ``last_value`` [N] (its value estimate of the observations it just acted on) and
``last_action_probs`` [N, A]; they are recorded per step next to the poses, actions and rewards (see
navzoo.agents.policy_agent). On scanned meshes a pose includes the agent's floor height (habitat's y), which
tells a building's storeys apart.
Episodes 0..E-1 of the split are each counted once, whichever environment ran them.
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm import tqdm

from navzoo.agents.draws import episode_key
from navzoo.errors import ConfigError
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.episodes import Episode
from navzoo.tasks import TASKS, get_task

_TRAJECTORY_FIELDS = ("positions", "headings", "heights", "actions", "rewards", "values", "action_probs")
_COUNTS = ("collisions", "num_steps", "visited_cells")  # EpisodeResult's integer metrics


@dataclass
class EpisodeResult:
    """One evaluated episode: its metrics (those of its task; the other tasks' fields stay None) and its
    trajectory."""

    episode_index: int
    episode_id: str
    scene_id: str
    path_length: float
    collisions: int
    num_steps: int
    episode_return: float
    positions: np.ndarray  # [T + 1, 2] agent positions from the start
    headings: np.ndarray  # [T + 1]
    actions: np.ndarray  # [T]
    rewards: np.ndarray  # [T], the reward of each action
    values: np.ndarray | None = None  # [T], the agent's value estimate before each action, if it has one
    action_probs: np.ndarray | None = None  # [T, A], the agent's action distribution, if it has one
    # [T + 1] float64, the floor height (habitat's y) under the agent at each pose, on scanned meshes; None
    # in navzoo's own one-storey scenes
    heights: np.ndarray | None = None
    task: str = "pointnav"
    geodesic_distance: float | None = None  # PointGoal: geodesic distance from the start to the goal
    success: float | None = None
    spl: float | None = None
    distance_to_goal: float | None = None
    flee_distance: float | None = None  # Flee: D_T = Geo(s_T, s_0) / Max(s_0), in [0, 1]
    visited_cells: int | None = None  # Explore: 1 m cells visited

    def metrics(self) -> dict:
        """The episode's numbers, without the trajectory and without the fields of other tasks."""
        mine = get_task(self.task).episode_fields
        others = [f for task in TASKS.values() for f in task.episode_fields if f not in mine]
        skip = {*_TRAJECTORY_FIELDS, "task", *others}
        return {k: v for k, v in asdict(self).items() if k not in skip}


def fixed_episodes(sim: BatchSim) -> list[Episode]:
    """`sim`'s fixed episode list; ConfigError for a simulator that samples training episodes instead."""
    if sim.episodes is None:
        raise ConfigError("split", sim.config.split, "'val' or 'test' (or an episodes_file) for evaluation")
    return sim.episodes


def evaluate(sim: BatchSim, agent, num_episodes: int, progress: bool = True) -> list[EpisodeResult]:
    """Run `agent` until each of the first `num_episodes` episodes of `sim`'s fixed set has ended once."""
    episodes = fixed_episodes(sim)
    if not 0 < num_episodes <= len(episodes):
        raise ConfigError("episodes", num_episodes, f"1 .. {len(episodes)} (episodes in this set)")
    obs = sim.reset(seed=sim.config.seed)  # reseeding restarts the episode order at episode 0
    trails = _Trajectories(sim)
    running = sim.episode_index.clone()
    first = torch.ones(sim.num_envs, dtype=torch.bool, device=sim.device)
    keyed = "keys" in inspect.signature(agent.act).parameters
    episode_keys = torch.tensor([episode_key(e) for e in episodes], device=sim.device)
    results: dict[int, EpisodeResult] = {}
    bar = tqdm(total=num_episodes, desc="episodes", unit="ep", disable=not progress, leave=False)
    while len(results) < num_episodes:
        if keyed:
            actions = agent.act(obs, first, keys=torch.stack([episode_keys[running], trails.step], 1))
        else:
            actions = agent.act(obs, first)
        value, probs = getattr(agent, "last_value", None), getattr(agent, "last_action_probs", None)
        obs, rewards, done, info = sim.step(actions)
        ended = info.get("episode")
        end_pos = sim.pos if ended is None else torch.where(done[:, None], ended["position"], sim.pos)
        end_heading = sim.heading if ended is None else torch.where(done, ended["heading"], sim.heading)
        end_floor = _floors(sim)
        if ended is not None and end_floor is not None:
            end_floor = torch.where(done.cpu(), ended["height"], end_floor)
        trails.record(actions, rewards, end_pos, end_heading, end_floor, value, probs)
        if ended is not None:  # some episodes ended (BatchSim.step reports them only then)
            for i in torch.nonzero(done).squeeze(1).tolist():
                index = int(running[i])
                if index < num_episodes and index not in results:
                    results[index] = _result(sim, index, episodes[index], ended, i, trails.episode(i))
                    bar.update(1)
            trails.restart(done, sim.pos, sim.heading, _floors(sim))
            running = torch.where(done, sim.episode_index, running)
        first = done
    bar.close()
    return [results[i] for i in range(num_episodes)]


def _floors(sim: BatchSim) -> torch.Tensor | None:
    """The floor height (habitat's y) under each agent on scanned meshes; None in navzoo's own scenes."""
    return None if sim.meshes is None else sim.meshes.height.clone()


class _Trajectories:
    """Per-environment buffers of the running episodes, indexed by the step within each episode."""

    def __init__(self, sim: BatchSim):
        n, limit, dev = sim.num_envs, sim.config.max_episode_steps, sim.device
        self.envs = torch.arange(n, device=dev)
        self.step = torch.zeros(n, dtype=torch.long, device=dev)
        self.positions = torch.zeros(limit + 1, n, 2, device=dev)
        self.headings = torch.zeros(limit + 1, n, device=dev)
        # float64 on the CPU, as the mesh scene source keeps them; None in navzoo's own scenes
        self.heights = None if sim.meshes is None else torch.zeros(limit + 1, n, dtype=torch.float64)
        self.actions = torch.zeros(limit, n, dtype=torch.long, device=dev)
        self.rewards = torch.zeros(limit, n, device=dev)
        self.values: torch.Tensor | None = None  # allocated once an agent reports values
        self.action_probs: torch.Tensor | None = None
        self.restart(torch.ones(n, dtype=torch.bool, device=dev), sim.pos, sim.heading, _floors(sim))

    def restart(
        self, envs: torch.Tensor, pos: torch.Tensor, heading: torch.Tensor, floor: torch.Tensor | None
    ) -> None:
        """Begin new episodes in the environments marked by the bool mask `envs`, at these poses (on meshes
        on floor heights `floor`)."""
        self.step[envs] = 0
        self.positions[0, envs], self.headings[0, envs] = pos[envs], heading[envs]
        if self.heights is not None and floor is not None:
            self.heights[0, envs.cpu()] = floor[envs.cpu()]

    def record(self, actions, rewards, pos, heading, floor, value=None, action_probs=None) -> None:
        """One step of every environment: its action, reward, the agent's outputs and the pose reached (on
        meshes with its floor height `floor`)."""
        step, envs = self.step, self.envs
        self.actions[step, envs], self.rewards[step, envs] = actions, rewards
        if value is not None:
            if self.values is None:
                self.values = torch.zeros_like(self.rewards)
            self.values[step, envs] = value.to(self.values.device, torch.float32)
        if action_probs is not None:
            if self.action_probs is None:
                shape = (*self.rewards.shape, action_probs.shape[-1])
                self.action_probs = torch.zeros(shape, device=self.rewards.device)
            self.action_probs[step, envs] = action_probs.to(self.action_probs.device, torch.float32)
        self.step += 1
        self.positions[self.step, envs], self.headings[self.step, envs] = pos, heading
        if self.heights is not None and floor is not None:
            self.heights[self.step.cpu(), envs.cpu()] = floor

    def episode(self, env: int) -> dict[str, np.ndarray | None]:
        """The finished episode of `env` as numpy arrays (EpisodeResult's trajectory fields)."""
        steps = int(self.step[env])

        def take(buffer: torch.Tensor | None, length: int) -> np.ndarray | None:
            return None if buffer is None else buffer[:length, env].cpu().numpy().copy()

        return {
            "positions": take(self.positions, steps + 1),
            "headings": take(self.headings, steps + 1),
            "heights": take(self.heights, steps + 1),
            "actions": take(self.actions, steps),
            "rewards": take(self.rewards, steps),
            "values": take(self.values, steps),
            "action_probs": take(self.action_probs, steps),
        }


def _result(
    sim: BatchSim, index: int, episode: Episode, ended: dict[str, torch.Tensor], env: int, trajectory: dict
) -> EpisodeResult:
    def value(key: str) -> float:
        return float(ended[key][env])

    def count(key: str) -> int:
        return int(ended[key][env])

    def metric(key: str) -> float | int:
        return count(key) if key in _COUNTS else value(key)

    return EpisodeResult(
        episode_index=index,
        episode_id=episode.episode_id,
        scene_id=episode.scene_id,
        path_length=value("path_length"),
        collisions=count("collisions"),
        num_steps=count("num_steps"),
        episode_return=value("episode_return"),
        task=sim.task.name,
        **{name: metric(name) for name in get_task(sim.task.name).episode_fields},
        **trajectory,
    )
