"""Explore, a transfer task of DD-PPO (section 6, appendix G): visit as much of the scene as possible."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from navzoo.tasks.base import ACTIONS_TEXT, MOTION_COLUMNS, CardText, Column, Task

if TYPE_CHECKING:
    from navzoo.sim.batch_sim import BatchSim

# On scanned scenes: the most cells one episode counts, over all storeys (8,192 m² at the default 1 m
# explore_cell_size, past the floors of any house); an episode shorter than that many steps keeps room for
# all of its cells.
MAX_VISITED_CELLS = 1 << 13


class Explore(Task):
    """Visit many cells: the count of 1 m cells visited, reward 0.25 per new cell. On scanned scenes a cell
    counts once per storey (navzoo.sim.scans.scene_source.MeshScenePool.storey_cells), up to
    MAX_VISITED_CELLS cells an episode."""

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

    def allocate(self, sim: BatchSim) -> None:
        if sim.meshes is not None:
            # A scan's extent is known only once its mesh is loaded: its episodes keep the keys of the cells
            # they visit instead, at most one new cell per step.
            size = (sim.num_envs, min(sim.config.max_episode_steps + 1, MAX_VISITED_CELLS))
            sim.visited = torch.full(size, -1, dtype=torch.long, device=sim.device)
            return
        rows, cols = sim.pool.atlas.heights.shape[1:]
        size, cell = sim.pool.cell_size, sim.config.explore_cell_size
        sim.visit_shape = (math.ceil(rows * size / cell), math.ceil(cols * size / cell))
        sim.visited = torch.zeros(sim.num_envs, *sim.visit_shape, dtype=torch.bool, device=sim.device)

    def begin(self, sim: BatchSim, envs: torch.Tensor) -> None:
        sim.visited[envs] = -1 if sim.meshes is not None else False
        self._visit(sim, envs)
        sim.geodesic[envs] = 0.0

    def step(self, sim: BatchSim, stop: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        newly = self._visit(sim, torch.arange(sim.num_envs, device=sim.device))
        return self.cell_reward * newly.float(), {"visited_cells": _visited_cells(sim)}

    def _visit(self, sim: BatchSim, envs: torch.Tensor) -> torch.Tensor:
        """Mark each env's current cell as visited; True where it was new."""
        if sim.meshes is not None:
            return _log_visit(sim, envs)
        size = sim.config.explore_cell_size
        row = (sim.pos[envs, 1] / size).long().clamp(0, sim.visit_shape[0] - 1)
        col = (sim.pos[envs, 0] / size).long().clamp(0, sim.visit_shape[1] - 1)
        new = ~sim.visited[envs, row, col]
        sim.visited[envs, row, col] = True
        return new


def _visited_cells(sim: BatchSim) -> torch.Tensor:
    """float [N]: how many cells each episode has visited."""
    if sim.meshes is not None:
        return (sim.visited >= 0).sum(1).float()
    return sim.visited.flatten(1).sum(1).float()


def _log_visit(sim: BatchSim, envs: torch.Tensor) -> torch.Tensor:
    """On scanned scenes: append each env's current cell (of its storey) to its visited keys where it is
    new and there is room; True there."""
    assert sim.meshes is not None
    keys = sim.meshes.storey_cells(
        sim.slot[envs], sim.pos[envs], sim.meshes.heights_of(envs), sim.config.explore_cell_size
    )
    log = sim.visited[envs]
    count = (log >= 0).sum(1)
    new = ~(log == keys[:, None]).any(1) & (count < log.shape[1])
    sim.visited[envs[new], count[new]] = keys[new]
    return new
