"""The tasks, each defined once: PointGoal (DD-PPO's task), and the Flee and Explore tasks of its transfer
experiments (section 6, appendices F-G).

A Task names itself (`name` in configs, `label` on pages and in tables), says whether it has a goal (the
GPS+Compass sensor; the goal-steering baselines and imitation need one), and carries what everything else
asks of it: the simulator's episode start, reward and metrics (`begin`, `step`, `observations`), the
metrics evaluation reports and ranks by, the episode statistics training logs, and what a model card says.
Adding a task means one more Task here, and its tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from navzoo.errors import ConfigError

if TYPE_CHECKING:
    from navzoo.sim.batch_sim import BatchSim

GOAL_SENSOR = "pointgoal_with_gps_compass"
ACTIONS_TEXT = "stop, move forward 0.25 m, turn left 10° or turn right 10°"


@dataclass(frozen=True)
class Column:
    """A column of the evaluation table: header, summary key, width and number format."""

    header: str
    key: str
    width: int
    fmt: str


@dataclass(frozen=True)
class CardText:
    """How a model card names a task and its results."""

    tag: str
    task_name: str  # the model-index task_name
    dataset: str  # in the model-index dataset name
    purpose: str  # what the policy does, for the card's first paragraph
    map_shows: str  # what the video's top-down map draws besides the agent


MOTION_COLUMNS = (
    Column("path length", "path_length", 11, ".2f"),
    Column("collisions", "collisions", 10, ".1f"),
    Column("steps", "num_steps", 7, ".1f"),
)


class Task:
    name: str
    label: str
    gym_id: str  # registered with gymnasium as navzoo/<gym_id>-v0
    has_goal: bool
    # The metrics evaluation reports with a 95% interval, the first ranking agents, with their labels.
    metrics: tuple[tuple[str, str], ...]
    # Per-episode metrics evaluation keeps (EpisodeResult fields) and training logs (episode/<name>).
    episode_fields: tuple[str, ...]
    training_metrics: tuple[str, ...]
    columns: tuple[Column, ...]  # navzoo eval's table
    # One episode's metrics in words (replays, the demo): (key, label, format).
    headline: tuple[tuple[str, str, str], ...]
    card: CardText

    @property
    def primary_metric(self) -> str:
        return self.metrics[0][0]

    def metric_label(self, key: str) -> str:
        return dict(self.metrics)[key]

    def outcome(self, episode: dict) -> str:
        """One evaluated episode's result in words, for a card's video."""
        raise NotImplementedError

    # --- the simulator's side ----------------------------------------------------------------------
    def allocate(self, sim: BatchSim) -> None:
        """Create the per-environment tensors the task keeps (its names are in `state_tensors`)."""

    state_tensors: tuple[str, ...] = ()
    starts_at_field_source: bool = False  # episodes start where the distance field is measured from

    def begin(self, sim: BatchSim, envs: torch.Tensor) -> None:
        """Set the task's per-episode state of `envs` whose episodes start (positions are already set)."""
        raise NotImplementedError

    def step(self, sim: BatchSim, stop: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """After the agents moved: the reward [N] and the task's metrics of every environment."""
        raise NotImplementedError

    def observations(self, sim: BatchSim, envs) -> dict[str, torch.Tensor]:
        """The task's sensors besides the cameras, for the listed environments."""
        return {}


class PointGoal(Task):
    """Reach the goal and call stop within 0.2 m of it (geodesic). Reward: terminal 2.5 * SPL, plus per step
    the decrease of the geodesic distance to the goal, minus 0.01 (DD-PPO)."""

    name, label, gym_id, has_goal = "pointnav", "PointGoal", "PointNav", True
    metrics = (("spl", "SPL"), ("success", "Success"))
    episode_fields = ("geodesic_distance", "success", "spl", "distance_to_goal")
    training_metrics = ("success", "spl", "distance_to_goal")
    columns = (
        Column("success", "success", 22, ".3f"),
        Column("SPL", "spl", 15, ".3f"),
        Column("dist-to-goal", "distance_to_goal", 12, ".2f"),
        Column("collisions", "collisions", 10, ".1f"),
    )
    headline = (
        ("success", "success", "{:.0f}"),
        ("spl", "SPL", "{:.3f}"),
        ("distance_to_goal", "distance to goal", "{:.2f} m"),
        ("geodesic_distance", "start distance, geodesic", "{:.2f} m"),
    )
    card = CardText(
        "pointgoal",
        "PointGoal navigation",
        "PointGoal",
        "A PointGoal navigation policy for [navzoo](https://pypi.org/project/navzoo/): given the goal's "
        f"position relative to the agent (GPS+Compass) and its own sensors, it chooses {ACTIONS_TEXT}.",
        "the shortest path",
    )
    success_reward = 2.5
    slack_reward = -0.01

    def outcome(self, episode: dict) -> str:
        reached = "reaches the goal" if episode.get("success") else "does not reach the goal"
        return f"the agent {reached} (SPL {episode.get('spl', 0.0):.2f})"

    def begin(self, sim, envs):
        sim.geodesic[envs] = sim.geodesic_distance(sim.pos[envs], envs)

    def step(self, sim, stop):
        previous = sim.geodesic
        current = sim.geodesic_distance(sim.pos)
        sim.geodesic = torch.where(torch.isfinite(current), current, previous)
        reward = -(sim.geodesic - previous) + self.slack_reward
        success = stop & (sim.geodesic <= sim.config.success_distance)
        spl = success.float() * sim.start_geodesic / torch.maximum(sim.start_geodesic, sim.path_length)
        reward = reward + self.success_reward * spl  # SPL is 0 unless the episode ends here
        return reward, {
            "success": success.float(),
            "spl": spl,
            "distance_to_goal": sim.geodesic.clone(),
            "geodesic_distance": sim.start_geodesic.clone(),
        }

    def observations(self, sim, envs):
        """GPS+Compass: the goal as (rho, phi) in the agent's frame, phi positive to its right."""
        rel = sim.goal[envs] - sim.pos[envs]
        heading = sim.heading[envs]
        forward = rel[:, 0] * torch.cos(heading) + rel[:, 1] * torch.sin(heading)
        left = -rel[:, 0] * torch.sin(heading) + rel[:, 1] * torch.cos(heading)
        return {GOAL_SENSOR: torch.stack([rel.norm(dim=1), torch.atan2(-left, forward)], 1)}


class Flee(Task):
    """End far from the start: D_T = Geo(s_T, s_0) / Max(s_0), reward 5 * (D_t - D_{t-1})."""

    name, label, gym_id, has_goal = "flee", "Flee", "Flee", False
    metrics = (("flee_distance", "Flee distance (D_T)"),)
    episode_fields = ("flee_distance",)
    training_metrics = ("flee_distance",)
    columns = (Column("flee distance", "flee_distance", 15, ".3f"), *MOTION_COLUMNS)
    headline = (("flee_distance", "flee distance", "{:.3f}"),)
    card = CardText(
        "flee",
        "Flee",
        "Flee",
        "A Flee policy for [navzoo](https://pypi.org/project/navzoo/): with no goal and no GPS+Compass, "
        "from its own sensors alone, it tries to end each 500-step episode as far from its start as it can "
        f"(geodesic distance), choosing {ACTIONS_TEXT}. Its score is D_T = Geo(s_T, s_0) / Max(s_0): the "
        "distance reached over the largest one in the scene.",
        "the agent's trajectory",
    )
    starts_at_field_source = True  # the distance field of a Flee episode is measured from its start
    reward_scale = 5.0

    def outcome(self, episode: dict) -> str:
        return f"the agent ends at flee distance D_T = {episode['flee_distance']:.2f}"

    def begin(self, sim, envs):
        sim.geodesic[envs] = 0.0

    def step(self, sim, stop):
        previous = sim.geodesic
        current = sim.geodesic_distance(sim.pos)
        sim.geodesic = torch.where(torch.isfinite(current), current, previous)
        scale = sim.pool.field_max[sim.field]
        reward = self.reward_scale * (sim.geodesic - previous) / scale
        return reward, {"flee_distance": sim.geodesic / scale}


class Explore(Task):
    """Visit many cells: the count of 1 m cells visited, reward 0.25 per new cell."""

    name, label, gym_id, has_goal = "explore", "Explore", "Explore", False
    metrics = (("visited_cells", "Visited cells"),)
    episode_fields = ("visited_cells",)
    training_metrics = ("visited_cells",)
    columns = (Column("visited cells", "visited_cells", 15, ".1f"), *MOTION_COLUMNS)
    headline = (("visited_cells", "cells visited", "{:.0f}"),)
    card = CardText(
        "explore",
        "Explore",
        "Explore",
        "An Explore policy for [navzoo](https://pypi.org/project/navzoo/): with no goal and no GPS+Compass, "
        "from its own sensors alone, it tries to visit as many 1 m cells of the scene as it can in a "
        f"500-step episode, choosing {ACTIONS_TEXT}. Its score is the number of cells visited.",
        "the agent's trajectory",
    )
    state_tensors = ("visited",)
    cell_reward = 0.25

    def outcome(self, episode: dict) -> str:
        return f"the agent visits {episode['visited_cells']:.0f} cells of 1 m"

    def allocate(self, sim):
        rows, cols = sim.pool.atlas.heights.shape[1:]
        size, cell = sim.pool.cell_size, sim.config.explore_cell_size
        sim.visit_shape = (math.ceil(rows * size / cell), math.ceil(cols * size / cell))
        sim.visited = torch.zeros(sim.num_envs, *sim.visit_shape, dtype=torch.bool, device=sim.device)

    def begin(self, sim, envs):
        sim.visited[envs] = False
        self._visit(sim, envs)
        sim.geodesic[envs] = 0.0

    def step(self, sim, stop):
        newly = self._visit(sim, torch.arange(sim.num_envs, device=sim.device))
        return self.cell_reward * newly.float(), {"visited_cells": sim.visited.flatten(1).sum(1).float()}

    def _visit(self, sim, envs: torch.Tensor) -> torch.Tensor:
        """Mark each env's current cell as visited; True where it was new."""
        size = sim.config.explore_cell_size
        row = (sim.pos[envs, 1] / size).long().clamp(0, sim.visit_shape[0] - 1)
        col = (sim.pos[envs, 0] / size).long().clamp(0, sim.visit_shape[1] - 1)
        new = ~sim.visited[envs, row, col]
        sim.visited[envs, row, col] = True
        return new


TASKS: dict[str, Task] = {task.name: task for task in (PointGoal(), Flee(), Explore())}


def get_task(name: str) -> Task:
    """The task named `name` ('pointnav', 'flee' or 'explore'); ConfigError for any other."""
    if name not in TASKS:
        raise ConfigError("task", name, tuple(TASKS))
    return TASKS[name]


def task_of_label(label: str) -> Task:
    """The task a page shows as `label` ('PointGoal', 'Flee' or 'Explore')."""
    for task in TASKS.values():
        if task.label == label:
            return task
    raise ConfigError("task", label, tuple(t.label for t in TASKS.values()))
