"""The `seen_map` sensor: an egocentric map of the walls the agent has seen this episode and of the places
it has been, the memory a map-building agent keeps (a depth camera and a pose, as the map-planner reads).

Observation `seen_map` [N, S, S, 2] float32 in {0, 1}, S = `seen_map_size` squares of `seen_map_cell`
metres centred on the agent, row 0 farthest ahead, column 0 farthest to the left:
- channel 0: a wall seen by the depth camera or felt by a bump (navzoo.sim.seen_map), or outside the scene's
  bounding rectangle (known in advance, as habitat's pathfinder bounds are);
- channel 1: a cell (of the scene's 0.25 m grid) the agent has stood in.

The map is the agent's memory, so it grows only as the simulator steps: `BatchSim.step` and `reset` map the
depth images they return, while `BatchSim.observe` (rendering at a pose set by hand, as a replay does) only
reads it. On scanned scenes the same observation comes from navzoo.sim.scans.seen_map, which maps what the
camera sees on the mesh at the agent's storey.
"""

from __future__ import annotations

import numpy as np
import torch

from navzoo.sim.seen_map import MappedSim, SeenMap, egocentric_grid


class SeenMapSensor:
    """The maps of every environment of `sim`, and their egocentric crops."""

    def __init__(self, sim: MappedSim):
        self.sim = sim
        self.map = SeenMap(sim)  # the map-planner teacher shares it (train.teacher)
        self.visited = np.zeros(self.map.solid.shape, np.bool_)

    def reset(self, envs: np.ndarray) -> None:
        """Forget the maps of `envs`: their episodes just began."""
        self.map.reset(envs)
        self.visited[envs] = False

    def record_actions(self, forward: np.ndarray) -> None:
        """Which environments [N] are sent forward: a step that goes nowhere marks what it hit."""
        self.map.record_actions(forward)

    def bump(self) -> None:
        """After the agents moved: mark what a forward step ran into."""
        self.map.bump(self.sim.pos.numpy(), self.sim.heading.numpy())

    def see(self, depth: torch.Tensor) -> None:
        """Map every environment's depth image [N, H, W, 1] seen from where it stands, and its cell."""
        pos, heading = self.sim.pos.numpy(), self.sim.heading.numpy()
        self.map.observe(depth[..., 0].numpy(), pos, heading)
        cells = np.floor(pos / self.map.cell_size).astype(np.int64)
        self.visited[np.arange(len(pos)), cells[:, 1], cells[:, 0]] = True

    def observation(self, envs: np.ndarray) -> torch.Tensor:
        """The `seen_map` observation [len(envs), S, S, 2] of `envs` at their current poses."""
        cfg, sim = self.sim.config, self.sim
        pos, heading = sim.pos.numpy()[envs], sim.heading.numpy()[envs]
        size, cell, grid_cell = cfg.seen_map_size, cfg.seen_map_cell, float(self.map.cell_size)
        walls = egocentric_grid(self.map.solid > 0, envs, pos, heading, size, cell, grid_cell, True)
        visited = egocentric_grid(self.visited, envs, pos, heading, size, cell, grid_cell, False)
        return torch.from_numpy(np.stack([walls, visited], -1))

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {**self.map.state_dict(), "visited": torch.from_numpy(self.visited.copy())}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.map.load_state_dict(state)
        self.visited[:] = state["visited"].numpy()
