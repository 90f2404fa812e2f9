"""Top-down maps of a simulator's scenes, whatever they are: one interface over navzoo's own scenes (their
grids, navzoo.evaluation.topdown) and scanned meshes (their navmesh, navzoo.evaluation.navmesh_map), for the
evaluation's maps and the gymnasium environments' render.

A scene is named by its slot in the simulator, a goal by its distance field's index in the episode table;
`floor` is the agent's floor height (habitat's y), which picks a scanned building's storey and means
nothing in navzoo's one-storey scenes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from navzoo.evaluation.navmesh_map import navmesh_canvas
from navzoo.evaluation.topdown import MapCanvas, scene_canvas, shortest_path
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.scenes import CELL_SIZE

if TYPE_CHECKING:
    from navzoo.sim.pool import ScenePool
    from navzoo.sim.scans.scene_source import MeshScenePool


class SceneMaps(Protocol):
    def canvas(self, slot: int, floor: float) -> MapCanvas:
        """The scene in `slot` from above, the storey at `floor`."""
        ...

    def shortest_path(self, slot: int, field: int, start, floor: float) -> np.ndarray:
        """Floor points [K, 2] from `start` (x, y) on `floor` to the source of distance field `field`."""
        ...

    def start_floor(self, episode_index: int) -> float:
        """The floor height at the start of a fixed episode."""
        ...

    def floor(self, env: int) -> float:
        """The floor height under environment `env`'s agent now."""
        ...


def scene_maps(sim: BatchSim, cell_pixels: int = 6) -> SceneMaps:
    """The maps of `sim`'s scenes at `cell_pixels` pixels per navzoo scene cell (scanned scenes at the same
    scale in pixels per metre)."""
    if sim.meshes is None:
        return GridMaps(sim.pool, cell_pixels)
    return MeshMaps(sim.meshes, cell_pixels / CELL_SIZE)


def maps_of_size(sim: BatchSim, slot: int, pixels: int) -> SceneMaps:
    """The maps of `sim`'s scenes at the scale that draws the scene in `slot` about `pixels` wide or high,
    whichever is longer (navzoo's scenes at 2 to 12 whole pixels per scene cell)."""
    if sim.meshes is None:
        shape = sim.pool.assets[slot].scene.shape
        return GridMaps(sim.pool, int(np.clip(pixels // max(shape), 2, 12)))
    navmesh = sim.meshes.scenes[slot].navmesh
    return MeshMaps(sim.meshes, pixels / (max(navmesh.shape) * navmesh.cell))


class GridMaps:
    """Maps of navzoo's own scenes: their height grids, the navigable cells tinted."""

    def __init__(self, pool: ScenePool, cell_pixels: int):
        self.pool, self.cell_pixels = pool, cell_pixels

    def canvas(self, slot: int, floor: float) -> MapCanvas:
        assets = self.pool.assets[slot]
        return scene_canvas(assets.scene, assets.nav, self.cell_pixels)

    def shortest_path(self, slot: int, field: int, start, floor: float) -> np.ndarray:
        nav = self.pool.assets[slot].nav
        rows, cols = nav.shape
        return shortest_path(nav, self.pool.fields[field, :rows, :cols].cpu().numpy(), start)

    def start_floor(self, episode_index: int) -> float:
        return 0.0

    def floor(self, env: int) -> float:
        return 0.0


class MeshMaps:
    """Maps of scanned scenes: the navigable floor of their navmesh."""

    def __init__(self, meshes: MeshScenePool, px_per_m: float):
        self.meshes, self.px_per_m = meshes, px_per_m

    def canvas(self, slot: int, floor: float) -> MapCanvas:
        return navmesh_canvas(self.meshes.scenes[slot].navmesh, floor, self.px_per_m)

    def shortest_path(self, slot: int, field: int, start, floor: float) -> np.ndarray:
        where = np.array([start[0], floor, -start[1]], dtype=np.float64)  # habitat's position
        path = self.meshes.field_search(field).path(where)
        if len(path) == 0:  # off the navmesh, or cut off: the start alone
            return np.asarray([[start[0], start[1]]], dtype=np.float64)
        return np.stack([path[:, 0], -path[:, 2]], 1)

    def start_floor(self, episode_index: int) -> float:
        return self.meshes.start_floor(episode_index)

    def floor(self, env: int) -> float:
        return float(self.meshes.height[env])
