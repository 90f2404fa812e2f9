"""PointGoal, DD-PPO's task: reach a goal given as GPS+Compass coordinates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from navzoo.names import GOAL_SENSOR
from navzoo.tasks.base import ACTIONS_TEXT, CardText, Column, Task

if TYPE_CHECKING:
    from navzoo.sim.batch_sim import BatchSim


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

    def begin(self, sim: BatchSim, envs: torch.Tensor) -> None:
        sim.geodesic[envs] = sim.geodesic_distance(sim.pos[envs], envs)

    def step(self, sim: BatchSim, stop: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        previous = sim.geodesic
        current = sim.geodesic_distance(sim.pos)
        sim.geodesic = torch.where(torch.isfinite(current), current, previous)
        reward = -(sim.geodesic - previous) + self.slack_reward
        success = stop & (sim.geodesic <= sim.config.success_distance)
        spl = success.float() * efficiency(sim.start_geodesic, sim.path_length)
        reward = reward + self.success_reward * spl  # SPL is 0 unless the episode ends here
        return reward, {
            "success": success.float(),
            "spl": spl,
            "distance_to_goal": sim.geodesic.clone(),
            "geodesic_distance": sim.start_geodesic.clone(),
        }

    def observations(self, sim: BatchSim, envs: torch.Tensor | slice) -> dict[str, torch.Tensor]:
        """GPS+Compass: the goal as (rho, phi) in the agent's frame, phi positive to its right."""
        rel = sim.goal[envs] - sim.pos[envs]
        heading = sim.heading[envs]
        forward = rel[:, 0] * torch.cos(heading) + rel[:, 1] * torch.sin(heading)
        left = -rel[:, 0] * torch.sin(heading) + rel[:, 1] * torch.cos(heading)
        return {GOAL_SENSOR: torch.stack([rel.norm(dim=1), torch.atan2(-left, forward)], 1)}


def efficiency(shortest: torch.Tensor, walked: torch.Tensor) -> torch.Tensor:
    """SPL's path efficiency l / max(l, p), the shortest path length l over the longer of it and the path
    walked p; 1 where both are 0. habitat divides 0 by 0 there (ZeroDivisionError, or NaN in numpy): its
    generator never makes an episode that starts at its goal, and navzoo refuses one when it is loaded, but
    an agent that walked the shortest path of 0 m walked it exactly, and a 0/0 must never reach a report."""
    longest = torch.maximum(shortest, walked)
    return torch.where(longest > 0, shortest / longest, torch.ones_like(longest))
