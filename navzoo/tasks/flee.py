"""Flee, a transfer task of DD-PPO (section 6, appendix F): end as far from the start as possible."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from navzoo.tasks.base import ACTIONS_TEXT, MOTION_COLUMNS, CardText, Column, Task

if TYPE_CHECKING:
    from navzoo.sim.batch_sim import BatchSim


class Flee(Task):
    """End far from the start: D_T = Geo(s_T, s_0) / Max(s_0), reward 5 * (D_t - D_{t-1}). Max(s_0) is the
    largest geodesic distance from the start, over the scene's navigation grid or its navmesh."""

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

    def begin(self, sim: BatchSim, envs: torch.Tensor) -> None:
        sim.geodesic[envs] = 0.0

    def step(self, sim: BatchSim, stop: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        previous = sim.geodesic
        current = sim.geodesic_distance(sim.pos)
        sim.geodesic = torch.where(torch.isfinite(current), current, previous)
        scale = sim.scenes.field_max[sim.field]
        reward = self.reward_scale * (sim.geodesic - previous) / scale
        return reward, {"flee_distance": sim.geodesic / scale}
