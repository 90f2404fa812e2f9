"""The seen_map sensor on scanned scenes (SimConfig.scenes_dir), built from what the depth camera sees on
the mesh.

The observation and its meaning are the native sensor's (navzoo.sim.map_sensor): `seen_map` [N, S, S, 2],
channel 0 what the agent has seen or bumped into that it would walk into, or outside the scene's bounding
rectangle, channel 1 the cells it has stood in, on a grid of navzoo's 0.25 m cells.

How walls are found differs. navzoo's scenes are boxes on that grid, so their map marks the cell behind
each vertical face (navzoo.sim.seen_map). A scan has walls at any angle, sloped floors, overhangs and
storeys, so here every measured depth pixel counts: its point marks the cell just behind it along its ray
(PUSH further, so that a face on a grid line marks the cell behind it, not the one in front) at its height,
in levels of HEIGHT_STEP metres. The map is a column of height levels per cell (bits of uint64 words), and
the sensor slices it at the agent's floor when it is read:

- channel 0: cells holding a point between a climb (the navmesh's max_climb) and the agent's height above
  its floor, what it would walk into there; floors it can step onto and ceilings stay out;
- channel 1: cells where it stood on a floor less than its height above or below its own.

Two storeys are at least the agent's height apart (it stands on each), so the slice at one storey leaves
the other out, and a storey walked back to shows what was seen there before. The slice is at the agent's
height: on a stair flight the steps more than a climb above it show as walls until it stands below them.

The grid covers the navmesh's rectangle (the stage's extent, known before any step as habitat's scene
bounds are), snapped out to multiples of the cell size in floor coordinates, so a scene exported from
navzoo (navzoo.interop.habitat_scenes) keeps its own cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from numba import njit

from navzoo.sim.scenes import CELL_SIZE
from navzoo.sim.seen_map import BUMP_MOVE, SeenMap, egocentric_grid, planner_refusal

if TYPE_CHECKING:
    from navzoo.sim.config import SimConfig
    from navzoo.sim.render import Camera
    from navzoo.sim.scans.navmesh import NavMesh
    from navzoo.sim.scans.scene_source import MeshScenePool

HEIGHT_STEP = 0.05  # metres per height level of the map's columns
# Metres past a depth point along its ray, to the cell behind the surface it lies on: far above a hit's
# rounding (under 3e-6 m on an exported navzoo scene), and so short that a ray meeting a box's edge seldom
# crosses into the free cell beside it.
PUSH = 1e-4
# Metres past the agent's disc where the obstacle a forward step ran into is looked for: the navmesh keeps
# the agent's centre up to about two of its 0.05 m cells further from an obstacle than its radius (the
# obstacle's own column, and Recast's erosion in whole cells).
BUMP_REACH = 0.1
EDGE_TOLERANCE = 1e-6  # in cells: a rectangle's edge this near a grid line lies on it
WORD_BITS = 64


@dataclass(frozen=True)
class MapGrid:
    """Where one scene's map lies: `rows` x `cols` cells of CELL_SIZE from the floor point `origin` (x, y),
    and `levels` height levels of HEIGHT_STEP from `base` (habitat's y of the lowest floor) up to the
    highest floor plus the agent's height. `climb`: the navmesh's max_climb."""

    origin: tuple[float, float]
    rows: int
    cols: int
    base: float
    levels: int
    climb: float

    @classmethod
    def of_navmesh(cls, navmesh: NavMesh, agent_height: float) -> MapGrid:
        rows, cols = navmesh.shape
        x_low, z_low = float(navmesh.origin[0]), float(navmesh.origin[2])
        x_high, z_high = x_low + cols * navmesh.cell, z_low + rows * navmesh.cell
        # Floor y is habitat's -z: the rectangle's floor-y range is (-z_high, -z_low).
        x0, x1 = _snap_out(x_low, x_high)
        y0, y1 = _snap_out(-z_high, -z_low)
        base = float(navmesh.y.min())
        levels = math.ceil((float(navmesh.y.max()) + agent_height - base) / HEIGHT_STEP) + 1
        return cls(
            (x0, y0),
            round((y1 - y0) / CELL_SIZE),
            round((x1 - x0) / CELL_SIZE),
            base,
            levels,
            navmesh.max_climb,
        )


def _snap_out(low: float, high: float) -> tuple[float, float]:
    """The grid lines (multiples of CELL_SIZE) at or just outside [low, high]."""
    start = math.floor(low / CELL_SIZE + EDGE_TOLERANCE)
    stop = max(math.ceil(high / CELL_SIZE - EDGE_TOLERANCE), start + 1)
    return start * CELL_SIZE, stop * CELL_SIZE


class MeshMappedSim(Protocol):
    """What the sensor reads of the simulator whose environments it maps (a BatchSim with scanned scenes)."""

    config: SimConfig
    camera: Camera
    num_envs: int
    meshes: MeshScenePool | None
    slot: torch.Tensor  # [N] each environment's scene slot
    pos: torch.Tensor  # [N, 2] floor points
    heading: torch.Tensor  # [N]


class MeshSeenMapSensor:
    """The seen maps of every environment of `sim` on scanned scenes, and their egocentric crops (the
    interface of navzoo.sim.map_sensor.SeenMapSensor)."""

    def __init__(self, sim: MeshMappedSim):
        assert sim.meshes is not None  # BatchSim builds this sensor for scanned scenes only
        self.sim, self.meshes = sim, sim.meshes
        n = sim.num_envs
        camera = sim.camera
        self._column_angle = camera.column_angle.cpu().numpy()  # [W], positive to the right
        self._stretch = camera.stretch.cpu().numpy().astype(np.float64)  # horizontal metres per z-depth
        image_rows = np.arange(camera.height, dtype=np.float64)
        self._tan_up = (camera.height / 2 - image_rows - 0.5) / camera.focal  # [H], top row first
        self._grids: dict[str, MapGrid] = {}  # of each mesh path
        # Each environment's grid (that of its episode's scene): origin, base, (rows, cols, levels), climb.
        self.origin = np.zeros((n, 2), np.float64)
        self.base = np.zeros(n, np.float64)
        self.shape = np.zeros((n, 3), np.int64)
        self.climb = np.zeros(n, np.float64)
        # Bits of height levels per cell, padded to the largest grid so far: surfaces seen, floors stood on.
        self.surfaces = np.zeros((n, 0, 0, 0), np.uint64)
        self.stood = np.zeros((n, 0, 0, 0), np.uint64)
        self._last_pos = np.zeros((n, 2), np.float32)
        self._last_forward = np.zeros(n, np.bool_)

    @property
    def map(self) -> SeenMap:
        """The native sensor's map, which the map planner plans on: none on scanned scenes."""
        raise planner_refusal(self.sim.config.scenes_dir)

    # --- episodes --------------------------------------------------------------------------------------
    def reset(self, envs: np.ndarray) -> None:
        """Forget the maps of `envs`: their episodes just began, in their slots' scenes."""
        self._take_grids(envs)
        self.surfaces[envs] = 0
        self.stood[envs] = 0
        self._last_pos[envs] = self.sim.pos.numpy()[envs]
        self._last_forward[envs] = False

    def _take_grids(self, envs: np.ndarray) -> None:
        """Give `envs` the grids of their slots' scenes, growing the maps to hold them."""
        for env in envs:
            grid = self._grid(int(self.sim.slot[env]))
            self.origin[env] = grid.origin
            self.base[env] = grid.base
            self.shape[env] = (grid.rows, grid.cols, grid.levels)
            self.climb[env] = grid.climb
        words = -(-self.shape[:, 2].max() // WORD_BITS)
        self._fit((int(self.shape[:, 0].max()), int(self.shape[:, 1].max()), int(words)))

    def _grid(self, slot: int) -> MapGrid:
        scene = self.meshes.scenes[slot]
        if scene.path not in self._grids:
            self._grids[scene.path] = MapGrid.of_navmesh(scene.navmesh, self.sim.config.agent_height)
        return self._grids[scene.path]

    def _fit(self, size: tuple[int, int, int]) -> None:
        """Grow the maps to at least (rows, cols, words), keeping what they hold."""
        wanted = tuple(max(a, b) for a, b in zip(self.surfaces.shape[1:], size, strict=True))
        if wanted == self.surfaces.shape[1:]:
            return
        self.surfaces, self.stood = (_padded(bits, wanted) for bits in (self.surfaces, self.stood))

    # --- mapping ---------------------------------------------------------------------------------------
    def record_actions(self, forward: np.ndarray) -> None:
        """Which environments [N] are sent forward: a step that goes nowhere marks what it hit."""
        self._last_forward[:] = forward

    def bump(self) -> None:
        """After the agents moved: where a forward step barely moved, mark the cell just ahead of the disc
        as a wall at the agent's floor."""
        pos, heading = self.sim.pos.numpy(), self.sim.heading.numpy()
        moved = np.hypot(*(pos - self._last_pos).T)
        hit = np.flatnonzero(self._last_forward & (moved < BUMP_MOVE))
        self._last_pos[:] = pos
        self._last_forward[:] = False  # each recorded step is judged once
        if len(hit) == 0:
            return
        reach = self.sim.config.agent_radius + BUMP_REACH
        ahead = pos[hit] + reach * np.stack([np.cos(heading[hit]), np.sin(heading[hit])], 1)
        row, col = self._cells(hit, ahead)
        inside = (row >= 0) & (row < self.shape[hit, 0]) & (col >= 0) & (col < self.shape[hit, 1])
        band = self._wall_band(hit)
        for k in np.flatnonzero(inside):
            self.surfaces[hit[k], row[k], col[k]] |= band[k]

    def see(self, depth: torch.Tensor) -> None:
        """Map every environment's depth image [N, H, W, 1] seen from where it stands, and its cell."""
        cfg, sim = self.sim.config, self.sim
        pos, heading = sim.pos.numpy().astype(np.float64), sim.heading.numpy().astype(np.float64)
        floor = self.meshes.height.numpy()
        angle = heading[:, None] - self._column_angle[None, :]  # [N, W]
        _mark_surfaces(
            depth[..., 0].numpy(),
            pos,
            floor + cfg.sensor_height,
            np.cos(angle),
            np.sin(angle),
            self._tan_up,
            self._stretch,
            cfg.min_depth,
            cfg.max_depth - cfg.min_depth,
            self.origin,
            self.base,
            self.shape,
            self.surfaces,
        )
        envs = np.arange(sim.num_envs)
        row, col = self._cells(envs, pos)
        level = self._level(envs, floor)
        _mark_cells(self.stood, envs, row, col, level, self.shape)

    def _cells(self, envs: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, col) int64 [M] of floor points [M, 2] in the grids of `envs`."""
        cells = np.floor((points - self.origin[envs]) / CELL_SIZE).astype(np.int64)
        return cells[:, 1], cells[:, 0]

    def _level(self, envs: np.ndarray, heights: np.ndarray) -> np.ndarray:
        """int64 [M]: the height level of habitat heights [M] in the columns of `envs`."""
        return np.floor((heights - self.base[envs]) / HEIGHT_STEP).astype(np.int64)

    # --- reading ---------------------------------------------------------------------------------------
    def _wall_band(self, envs: np.ndarray) -> np.ndarray:
        """uint64 [M, words]: the levels from a climb to the agent's height above each env's floor."""
        floor = self.meshes.height.numpy()[envs]
        low = self._level(envs, floor + self.climb[envs])
        high = self._level(envs, floor + self.sim.config.agent_height)
        return _band(low, high, self.surfaces.shape[3])

    def _storey_band(self, envs: np.ndarray) -> np.ndarray:
        """uint64 [M, words]: the levels of floors less than the agent's height from each env's floor."""
        floor, height = self.meshes.height.numpy()[envs], self.sim.config.agent_height
        low = self._level(envs, floor - height) + 1
        high = self._level(envs, floor + height)
        return _band(low, high, self.stood.shape[3])

    def observation(self, envs: np.ndarray) -> torch.Tensor:
        """The `seen_map` observation [len(envs), S, S, 2] of `envs` at their current poses."""
        cfg, sim = self.sim.config, self.sim
        relative = (sim.pos.numpy()[envs] - self.origin[envs]).astype(np.float32)
        heading = sim.heading.numpy()[envs]
        listed = np.arange(len(envs))
        size, cell = cfg.seen_map_size, cfg.seen_map_cell
        channels = []
        for bits, band, outside in (
            (self.surfaces, self._wall_band(envs), True),
            (self.stood, self._storey_band(envs), False),
        ):
            plane = _slice(bits, envs, band, self.shape, outside)
            channels.append(egocentric_grid(plane, listed, relative, heading, size, cell, CELL_SIZE, outside))
        return torch.from_numpy(np.stack(channels, -1))

    def walls(self, env: int) -> np.ndarray:
        """bool [rows, cols]: the cells channel 0 shows as walls at environment `env`'s floor, on its
        scene's grid (row 0 at the grid's smallest floor y)."""
        envs = np.array([env])
        plane = _slice(self.surfaces, envs, self._wall_band(envs), self.shape, True)[0]
        return plane[: self.shape[env, 0], : self.shape[env, 1]]

    # --- checkpointing ---------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        """The maps (uint64 bits stored as int64) and the last recorded position and action of each
        environment; the grids follow from the slots."""
        return {
            "surfaces": torch.from_numpy(self.surfaces.view(np.int64).copy()),
            "stood": torch.from_numpy(self.stood.view(np.int64).copy()),
            "last_pos": torch.from_numpy(self._last_pos.copy()),
            "last_forward": torch.from_numpy(self._last_forward.copy()),
        }

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore state_dict()'s maps; the simulator must hold the same scenes in the same slots."""
        self._take_grids(np.arange(self.sim.num_envs))
        saved = state["surfaces"].numpy().view(np.uint64)
        self._fit(saved.shape[1:])
        for name in ("surfaces", "stood"):
            bits = getattr(self, name)
            bits[:] = 0
            bits[:, : saved.shape[1], : saved.shape[2], : saved.shape[3]] = (
                state[name].numpy().view(np.uint64)
            )
        self._last_pos[:] = state["last_pos"].numpy()
        self._last_forward[:] = state["last_forward"].numpy()


def _padded(bits: np.ndarray, size: tuple[int, ...]) -> np.ndarray:
    grown = np.zeros((len(bits), *size), np.uint64)
    grown[:, : bits.shape[1], : bits.shape[2], : bits.shape[3]] = bits
    return grown


@njit(cache=True)
def _band(low, high, words):
    """uint64 [M, words]: bits low[m] .. high[m] - 1 set (clipped to the words)."""
    out = np.zeros((low.shape[0], words), np.uint64)
    for m in range(low.shape[0]):
        for level in range(max(low[m], 0), min(high[m], words * WORD_BITS)):
            out[m, level // WORD_BITS] |= np.uint64(1) << np.uint64(level % WORD_BITS)
    return out


@njit(cache=True)
def _slice(bits, envs, band, shape, outside):
    """bool [M, rows, cols] of the padded maps: whether the cells of `envs` hold a level of `band` [M];
    `outside` for the padding beyond each env's own grid."""
    out = np.zeros((envs.shape[0], bits.shape[1], bits.shape[2]), np.bool_)
    for m in range(envs.shape[0]):
        env = envs[m]
        for r in range(bits.shape[1]):
            for c in range(bits.shape[2]):
                if r >= shape[env, 0] or c >= shape[env, 1]:
                    out[m, r, c] = outside
                    continue
                for k in range(bits.shape[3]):
                    if bits[env, r, c, k] & band[m, k]:
                        out[m, r, c] = True
                        break
    return out


@njit(cache=True)
def _mark_cells(bits, envs, rows, cols, levels, shape):
    """Set the bit of level levels[m] in cell (rows[m], cols[m]) of env envs[m], where it lies inside."""
    for m in range(envs.shape[0]):
        env, level = envs[m], levels[m]
        if 0 <= rows[m] < shape[env, 0] and 0 <= cols[m] < shape[env, 1] and 0 <= level < shape[env, 2]:
            bits[env, rows[m], cols[m], level // WORD_BITS] |= np.uint64(1) << np.uint64(level % WORD_BITS)


@njit(cache=True)
def _mark_surfaces(
    depth, pos, eye, cos_a, sin_a, tan_up, stretch, min_depth, span, origin, base, shape, surfaces
):
    """MeshSeenMapSensor.see's surfaces, pixel by pixel: each depth pixel measured (not clipped at either
    end of the range, nor a miss) marks its point's level in the cell PUSH behind it along its ray. `eye`
    [N] is each camera's height, `cos_a`, `sin_a` [N, W] each column's ray, `tan_up` [H] each row's
    elevation and `stretch` [W] the horizontal distance per unit of z-depth."""
    n, height, width = depth.shape
    top = 1 - 1e-3
    for i in range(n):
        rows, cols, levels = shape[i, 0], shape[i, 1], shape[i, 2]
        for r in range(height):
            for w in range(width):
                d = depth[i, r, w]
                if not (d > 0 and d < top):
                    continue
                metres = min_depth + d * span
                level = math.floor((eye[i] + metres * tan_up[r] - base[i]) / HEIGHT_STEP)
                if level < 0 or level >= levels:
                    continue
                reach = metres * stretch[w] + PUSH
                col = math.floor((pos[i, 0] + reach * cos_a[i, w] - origin[i, 0]) / CELL_SIZE)
                row = math.floor((pos[i, 1] + reach * sin_a[i, w] - origin[i, 1]) / CELL_SIZE)
                if 0 <= row < rows and 0 <= col < cols:
                    surfaces[i, row, col, level // WORD_BITS] |= np.uint64(1) << np.uint64(level % WORD_BITS)
