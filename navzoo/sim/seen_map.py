"""A map of the walls an agent has seen, and the shortest way to its goal on it.

Each environment keeps a grid of solid cells (the scene's 0.25 m cells) built from its own depth images,
and from bumps into obstacles its camera never showed (a low box met from too close to see it). Cells it
has not seen count as free, and only the scene's bounding rectangle is known in advance (as habitat's
pathfinder bounds are): a planner on this map walks the shortest way it can believe in, and replans as
walls appear. That is the map-planner baseline (navzoo.agents.baselines), a classical depth + pose +
goal agent.

A depth pixel marks a cell only when it lies on a vertical face (the pixel below it is at the same
horizontal distance), between the floor and the agent's height, and on exactly one grid line: the scenes'
walls and boxes are whole cells, so such a point names the cell behind the face. Tops of boxes, floors and
corners (on two lines at once) are left alone, so seen cells are never wrong.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from numba import njit

from navzoo.errors import ConfigError
from navzoo.sim import kernels
from navzoo.sim.navgrid import NAV_SUBDIVISION
from navzoo.sim.seen_map_paths import (
    MOVE_CROSSED,
    MOVE_CROSSED_COUNT,
    MOVE_KIND,
    MOVE_LENGTHS,
    MOVES,
    plan_from_goal,
    ways_open,
)

if TYPE_CHECKING:
    from navzoo.sim.config import SimConfig
    from navzoo.sim.pool import ScenePool
    from navzoo.sim.render import Camera

FACE_TOLERANCE = 0.002  # metres: how near a grid line a point must be, and pixel rows apart on one face
FLOOR_CLEARANCE = 0.02  # metres: points below this height are floor
BUMP_MOVE = 0.05  # metres: a forward step that moved less than this hit something
BUMP_REACH = 0.02  # metres past the agent's disc where the obstacle it hit is looked for
# A plan settles the distances up to the agent's own plus this much (metres), and serves while the map
# stays the same and the agent's distance stays this much below that bound, less REUSE_SLACK.
PLAN_MARGIN = 2.0
REUSE_SLACK = 1.0
# Within this distance of the goal (metres) the steering's decision to stop reads the distance where the
# agent stands, so a grown map is planned afresh there rather than trusted on its way to the goal.
NEAR_GOAL = 1.0


class MappedSim(Protocol):
    """What a SeenMap and the seen_map sensor read of the simulator whose environments they map (a BatchSim,
    which keeps the sensor and so is not imported here)."""

    config: SimConfig
    pool: ScenePool
    camera: Camera
    num_envs: int
    slot: torch.Tensor  # [N] each environment's scene slot in the pool
    pos: torch.Tensor  # [N, 2]
    heading: torch.Tensor  # [N]


def planner_refusal(scenes_dir: str | None) -> ConfigError:
    """The error for a planner's map on scanned scenes: SeenMap plans on navzoo's own scenes' grid."""
    return ConfigError(
        "scenes_dir",
        scenes_dir,
        "None for the map planner's map (navzoo.sim.seen_map plans on navzoo's own scenes' grid); on scanned "
        "scenes the seen_map sensor maps what the camera sees, without a planner",
    )


def seen_map_bytes(rows: int, cols: int) -> int:
    """What one environment's SeenMap keeps for a scene grid of rows x cols cells: float32 `solid` per
    cell, and per navigation cell bool `passable`, float32 `fields` and int8 `via`."""
    return rows * cols * (4 + NAV_SUBDIVISION**2 * (1 + 4 + 1))


class SeenMap:
    """Per-environment maps of seen solid cells, `solid` [N, rows, cols] (1 solid, 0 free or unseen), and
    distance fields to each environment's goal on them, `fields` [N, 2 rows, 2 cols] (metres, inf where
    unreachable), on the simulator's navigation grid."""

    def __init__(self, sim: MappedSim):
        if "depth" not in sim.config.sensors:
            raise ValueError(f"a seen map is built from depth images; the simulator has {sim.config.sensors}")
        if sim.config.scenes_dir is not None:
            raise planner_refusal(sim.config.scenes_dir)
        self.sim = sim
        cfg, pool = sim.config, sim.pool
        rows, cols = pool.atlas.heights.shape[1:]
        n = sim.num_envs
        self.cell_size, self.nav_cell = np.float32(pool.cell_size), np.float32(pool.nav_cell)
        self.path_radius = np.float32(max(cfg.agent_radius - pool.nav_cell / 2, 0.0))  # as NavGrid's
        self.solid = np.ones((n, rows, cols), np.float32)
        # Which navigation cells a path may use (NavGrid.passable of the map), kept up to date as cells turn
        # solid, so that a replan only searches.
        self.passable = np.zeros((n, NAV_SUBDIVISION * rows, NAV_SUBDIVISION * cols), np.bool_)
        self.fields = np.full(self.passable.shape, np.inf, np.float32)
        # The move (index into MOVES) by which each cell's shortest way leaves towards the goal: it is
        # reached from the cell MOVES[k] behind it (-1 at the goal). A way whose cells and crossings are
        # all still passable keeps its length when the map grows (see intact).
        self.via = np.full(self.passable.shape, -1, np.int8)
        # Up to which distance each field is exact: a plan stops once it has settled every cell the
        # straight-line steering may look up (see replan); -inf before the first plan of an episode.
        self.bounds = np.full(n, -np.inf, np.float32)
        # Whether each map has grown since its field was planned: then only ways still open are exact.
        self.grown = np.zeros(n, np.bool_)
        # The planner's queues, one region per move length: each node enters at most once per move.
        per_kind = np.bincount(MOVE_KIND) * self.passable[0].size + 1
        self._queue_starts = np.concatenate([[0], np.cumsum(per_kind)[:-1]]).astype(np.int64)
        self._queue_keys = np.empty(per_kind.sum(), np.float32)
        self._queue_nodes = np.empty(per_kind.sum(), np.int64)
        camera = sim.camera
        self._column_angle = camera.column_angle.cpu().numpy()  # [W], positive to the right
        self._stretch = camera.stretch.cpu().numpy()  # [W] horizontal distance per unit of z-depth
        image_rows = np.arange(camera.height, dtype=np.float32)
        self._tan_up = (camera.height / 2 - image_rows - 0.5) / camera.focal  # [H], top row first
        self._last_pos = np.zeros((n, 2), np.float32)
        self._last_forward = np.zeros(n, np.bool_)

    def reset(self, envs: np.ndarray) -> None:
        """Forget the maps of `envs` (their episodes just began): unseen inside the scene's rectangle, solid
        outside it."""
        for i in envs:
            rows, cols = self.sim.pool.assets[int(self.sim.slot[i])].scene.shape
            self.solid[i] = 1.0
            self.solid[i, :rows, :cols] = 0.0
            self._last_pos[i] = self.sim.pos[i].numpy()
            self._last_forward[i] = False
            self._derive(i)

    def _derive(self, env: int) -> None:
        """Recompute what follows from map `env`'s solid cells (passable cells) and drop its plan."""
        rows, cols = self.sim.pool.assets[int(self.sim.slot[env])].scene.shape
        self.passable[env] = False
        _passable_cells(self.solid, self.passable, env, rows, cols, *self._geometry())
        self.fields[env] = np.inf
        self.via[env] = -1
        self.bounds[env] = -np.inf
        self.grown[env] = False

    def state_dict(self) -> dict[str, torch.Tensor]:
        """What the maps need to go on exactly after a restart: the solid cells and the last recorded
        position and action of each environment. Plans are made again from them, and plans only ever
        settle exact distances, so the planner chooses as it would have."""
        return {
            "solid": torch.from_numpy(self.solid > 0),
            "last_pos": torch.from_numpy(self._last_pos.copy()),
            "last_forward": torch.from_numpy(self._last_forward.copy()),
        }

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore state_dict()'s maps; the simulator must hold the same scenes in the same slots."""
        self.solid[:] = state["solid"].numpy()
        self._last_pos[:] = state["last_pos"].numpy()
        self._last_forward[:] = state["last_forward"].numpy()
        for env in range(len(self.solid)):
            self._derive(env)

    def _geometry(self) -> tuple:
        """(cell_size, nav_cell, path_radius) as the kernels take them."""
        return self.cell_size, self.nav_cell, self.path_radius

    def observe(self, depth: np.ndarray, pos: np.ndarray, heading: np.ndarray) -> np.ndarray:
        """Mark the cells behind the vertical faces in the depth observations [N, H, W] (normalised from
        [min_depth, max_depth], as the simulator gives them) seen from `pos` [N, 2] facing `heading` [N];
        returns which environments' maps grew [N]."""
        cfg = self.sim.config
        angle = heading[:, None] - self._column_angle[None, :]  # [N, W], float32 as the kernel computes
        grew = _observe(
            depth,
            pos,
            np.cos(angle),
            np.sin(angle),
            self._tan_up,
            self._stretch,
            np.float32(cfg.min_depth),
            np.float32(cfg.max_depth - cfg.min_depth),
            np.float32(cfg.sensor_height),
            np.float32(cfg.agent_height),
            self.solid,
            self.passable,
            *self._geometry(),
        )
        self.grown |= grew
        return grew

    def bump(self, pos: np.ndarray, heading: np.ndarray) -> np.ndarray:
        """Where the last recorded action was forward and the agent barely moved since, mark the cell just
        ahead of its disc. Returns which environments' maps grew [N]."""
        moved = np.hypot(*(pos - self._last_pos).T)
        hit = self._last_forward & (moved < BUMP_MOVE)
        grew = np.zeros(len(pos), np.bool_)
        reach = self.sim.config.agent_radius + BUMP_REACH
        for i in np.flatnonzero(hit):
            x, y = pos[i, 0] + reach * math.cos(heading[i]), pos[i, 1] + reach * math.sin(heading[i])
            row, col = math.floor(y / self.cell_size), math.floor(x / self.cell_size)
            if self.solid[i, row, col] <= 0:
                _make_solid(self.solid, self.passable, i, row, col, *self._geometry())
                grew[i] = True
        self._last_pos[:] = pos
        self._last_forward[:] = False  # each recorded step is judged once, whoever calls bump()
        self.grown |= grew
        return grew

    def record_actions(self, forward: np.ndarray) -> None:
        """Which environments [N] were just sent forward, for the next bump()."""
        self._last_forward[:] = forward

    def egocentric(
        self, pos: np.ndarray, heading: np.ndarray, size: int, cell: float, envs: np.ndarray | None = None
    ) -> np.ndarray:
        """[N, size, size]: 1 where a `cell`-metre square of a grid centred on each agent at `pos` [N, 2]
        holds a seen solid cell (or lies outside the atlas), 0 elsewhere, in the agent's frame at `heading`
        [N] (egocentric_grid); `envs` [N] names the maps (all of them by default)."""
        envs = np.arange(len(self.solid)) if envs is None else envs
        return egocentric_grid(self.solid > 0, envs, pos, heading, size, cell, float(self.cell_size), True)

    def planned_distance(self, pos: np.ndarray) -> np.ndarray:
        """Each field's value [N] at the navigation cell of `pos` [N, 2]."""
        rows = np.floor(pos[:, 1] / self.nav_cell).astype(np.int64)
        cols = np.floor(pos[:, 0] / self.nav_cell).astype(np.int64)
        return self.fields[np.arange(len(pos)), rows, cols]

    def stale(self, pos: np.ndarray) -> np.ndarray:
        """Which environments' fields no longer serve an agent at `pos` [N, 2]: its distance is within
        REUSE_SLACK of where the last plan stopped, or unknown."""
        return ~(self.planned_distance(pos) <= self.bounds - REUSE_SLACK)

    def intact(self, envs: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """Whether the planned way from each cell (row * cols + col of the field, -1 for none) of `envs`
        to the goal is still open on the map as it is now [len(envs)]. Walls only ever appear, so a field
        planned earlier never overstates a distance; where the way from a cell is still open, its distance
        is still exact."""
        return ways_open(self.passable, self.via, envs, cells, MOVES, MOVE_CROSSED, MOVE_CROSSED_COUNT)

    def replan(
        self, envs: np.ndarray, goals: np.ndarray, pos: np.ndarray, margin: float = PLAN_MARGIN
    ) -> None:
        """Recompute the distance fields of `envs` to their goals [N, 2] on their current maps, exact up to
        the distance of the agent at `pos` [N, 2] plus `margin` (inf: every reachable cell)."""
        for i in envs:
            rows, cols = self.sim.pool.assets[int(self.sim.slot[i])].scene.shape
            self.grown[i] = False
            self.bounds[i] = plan_from_goal(
                self.passable,
                i,
                NAV_SUBDIVISION * rows,
                NAV_SUBDIVISION * cols,
                self.nav_cell,
                goals[i],
                pos[i],
                np.float32(margin),
                self.fields,
                self.via,
                MOVES,
                MOVE_LENGTHS,
                MOVE_KIND,
                MOVE_CROSSED,
                MOVE_CROSSED_COUNT,
                self._queue_starts,
                self._queue_keys,
                self._queue_nodes,
            )


def egocentric_grid(
    grid: np.ndarray,
    envs: np.ndarray,
    pos: np.ndarray,
    heading: np.ndarray,
    size: int,
    cell: float,
    grid_cell: float,
    outside: bool,
) -> np.ndarray:
    """[len(envs), size, size] float32: 1 where a `cell`-metre square of a grid centred on the agent of each
    of `envs` at `pos` [M, 2] holds a true cell of its bool map `grid[env]` (cells of `grid_cell` metres),
    and where it lies outside the map if `outside`; in the agent's frame at `heading` [M]: row 0 is the
    farthest ahead, column 0 the farthest to the left. Each square is sampled at the centres of its
    quarters, so a cell a square only grazes may be missed."""
    samples = 2 * size
    offsets = (np.arange(samples, dtype=np.float32) - samples / 2 + 0.5) * (cell / 2)
    out = np.zeros((len(envs), size, size), np.float32)
    cos, sin = np.cos(heading).astype(np.float32), np.sin(heading).astype(np.float32)
    _egocentric(grid, envs, pos, cos, sin, offsets, np.float32(grid_cell), outside, out)
    return out


@njit(cache=True)
def _egocentric(grid, envs, pos, cos, sin, offsets, grid_cell, outside, out):
    """egocentric_grid's sampling, in float32 throughout: `offsets` [S] are the samples' distances from
    the agent along each axis, row 0 of `out` the farthest ahead."""
    samples = offsets.shape[0]
    map_rows, map_cols = grid.shape[1], grid.shape[2]
    for i in range(envs.shape[0]):
        env = envs[i]
        for a in range(samples):
            ahead = offsets[samples - 1 - a]
            # Forward is (cos, sin); angles grow to the left, so the right is (sin, -cos).
            x_row, y_row = pos[i, 0] + ahead * cos[i], pos[i, 1] + ahead * sin[i]
            for b in range(samples):
                if out[i, a // 2, b // 2] > 0:
                    continue
                row = math.floor((y_row - offsets[b] * cos[i]) / grid_cell)
                col = math.floor((x_row + offsets[b] * sin[i]) / grid_cell)
                inside = 0 <= row < map_rows and 0 <= col < map_cols
                if grid[env, row, col] if inside else outside:
                    out[i, a // 2, b // 2] = 1.0


@njit(cache=True)
def _observe(
    depth,
    pos,
    cos_a,
    sin_a,
    tan_up,
    stretch,
    min_depth,
    span,
    sensor_height,
    agent_height,
    solid,
    passable,
    cell_size,
    nav_cell,
    path_radius,
):
    """SeenMap.observe for every environment, pixel by pixel in float32: the cosines and sines [N, W] of
    each column's ray, the tangent of each row's elevation [H] and the horizontal distance per unit of
    z-depth of each column [W]. A pixel marks the solid cell behind it when its depth was measured (not
    clipped at either end of the range), the pixel below lies at the same horizontal distance (a vertical
    face), it is between the floor and the agent's height, and its point lies on exactly one grid line."""
    n, rows, cols = depth.shape
    top, tolerance = np.float32(1 - 1e-3), np.float32(FACE_TOLERANCE)
    floor_clearance = np.float32(FLOOR_CLEARANCE)
    height_cells, width_cells = solid.shape[1], solid.shape[2]
    grew = np.zeros(n, np.bool_)
    for i in range(n):
        for r in range(rows - 1):  # the bottom row has no pixel below it to show a face
            for w in range(cols):
                d = depth[i, r, w]
                if not (d > 0 and d < top):
                    continue
                metres = min_depth + d * span
                reach = metres * stretch[w]  # horizontal distance to the point
                below = (min_depth + depth[i, r + 1, w] * span) * stretch[w]
                height = sensor_height + metres * tan_up[r]
                if not (abs(reach - below) < tolerance and floor_clearance < height < agent_height):
                    continue
                # The face lies on a grid line x = k * cell or y = k * cell; the cell is on its far side.
                fx = (pos[i, 0] + reach * cos_a[i, w]) / cell_size
                fy = (pos[i, 1] + reach * sin_a[i, w]) / cell_size
                nearest_x, nearest_y = np.float32(np.rint(fx)), np.float32(np.rint(fy))
                on_x = abs(fx - nearest_x) * cell_size < tolerance
                on_y = abs(fy - nearest_y) * cell_size < tolerance
                if on_x == on_y:  # a floor point, or a corner
                    continue
                col = int(nearest_x) - (cos_a[i, w] < 0) if on_x else int(np.floor(fx))
                row = int(nearest_y) - (sin_a[i, w] < 0) if on_y else int(np.floor(fy))
                if 0 <= row < height_cells and 0 <= col < width_cells and solid[i, row, col] <= 0:
                    _make_solid(solid, passable, i, row, col, cell_size, nav_cell, path_radius)
                    grew[i] = True
    return grew


@njit(cache=True)
def _make_solid(solid, passable, env, row, col, cell_size, nav_cell, path_radius):
    """Mark cell (row, col) of map `env` solid, and recheck the navigation cells whose paths it may block."""
    solid[env, row, col] = 1.0
    reach = math.ceil(path_radius / nav_cell) + 1
    sub = round(cell_size / nav_cell)
    for r in range(max(sub * row - reach, 0), min(sub * (row + 1) + reach, passable.shape[1])):
        for c in range(max(sub * col - reach, 0), min(sub * (col + 1) + reach, passable.shape[2])):
            if passable[env, r, c]:
                x, y = np.float32((c + 0.5) * nav_cell), np.float32((r + 0.5) * nav_cell)
                passable[env, r, c] = kernels.disc_free(solid, cell_size, env, x, y, path_radius)


@njit(cache=True)
def _passable_cells(solid, passable, env, rows, cols, cell_size, nav_cell, path_radius):
    """passable[env] of a map whose scene is `rows` x `cols` cells: navigation cells whose centre is
    `path_radius` clear (NavGrid.passable)."""
    sub = round(cell_size / nav_cell)
    for r in range(sub * rows):
        for c in range(sub * cols):
            x, y = np.float32((c + 0.5) * nav_cell), np.float32((r + 0.5) * nav_cell)
            passable[env, r, c] = kernels.disc_free(solid, cell_size, env, x, y, path_radius)
