"""A map of the walls an agent has seen, and the shortest way to its goal on it.

Each environment keeps a grid of solid cells (the scene's 0.25 m cells) built from its own depth images,
and from bumps into obstacles its camera never showed (a low box met from too close to see it). Cells it
has not seen count as free, and only the scene's bounding rectangle is known in advance (as habitat's
pathfinder bounds are): a planner on this map walks the shortest way it can believe in, and replans as
walls appear. That is the map-planner baseline (navzoo.baselines), a classical depth + pose + goal agent.

A depth pixel marks a cell only when it lies on a vertical face (the pixel below it is at the same
horizontal distance), between the floor and the agent's height, and on exactly one grid line: the scenes'
walls and boxes are whole cells, so such a point names the cell behind the face. Tops of boxes, floors and
corners (on two lines at once) are left alone, so seen cells are never wrong.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from numba import njit

from navzoo.sim import kernels
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.navgrid import EDGES

FACE_TOLERANCE = 0.002  # metres: how near a grid line a point must be, and pixel rows apart on one face
FLOOR_CLEARANCE = 0.02  # metres: points below this height are floor
BUMP_MOVE = 0.05  # metres: a forward step that moved less than this hit something
BUMP_REACH = 0.02  # metres past the agent's disc where the obstacle it hit is looked for


def _moves() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The navigation grid's 16 moves both ways: (d_row, d_col) [16, 2], length in cells [16], the cells
    each crosses besides its ends [16, 2, 2] and how many [16]."""
    steps, lengths, crossed, counts = [], [], [], []
    for d_row, d_col, cells in EDGES:
        for sign in (1, -1):
            steps.append((sign * d_row, sign * d_col))
            lengths.append(math.hypot(d_row, d_col))
            padded = [(sign * r, sign * c) for r, c in cells] + [(0, 0)] * (2 - len(cells))
            crossed.append(padded)
            counts.append(len(cells))
    return (
        np.array(steps, np.int64),
        np.array(lengths, np.float32),
        np.array(crossed, np.int64),
        np.array(counts, np.int64),
    )


MOVES, MOVE_LENGTHS, MOVE_CROSSED, MOVE_CROSSED_COUNT = _moves()


class SeenMap:
    """Per-environment maps of seen solid cells, `solid` [N, rows, cols] (1 solid, 0 free or unseen), and
    distance fields to each environment's goal on them, `fields` [N, 2 rows, 2 cols] (metres, inf where
    unreachable), on the simulator's navigation grid."""

    def __init__(self, sim: BatchSim):
        if "depth" not in sim.config.sensors:
            raise ValueError(f"a seen map is built from depth images; the simulator has {sim.config.sensors}")
        self.sim = sim
        cfg, pool = sim.config, sim.pool
        rows, cols = pool.atlas.heights.shape[1:]
        n = sim.num_envs
        self.cell_size, self.nav_cell = np.float32(pool.cell_size), np.float32(pool.nav_cell)
        self.path_radius = np.float32(max(cfg.agent_radius - pool.nav_cell / 2, 0.0))  # as NavGrid's
        self.solid = np.ones((n, rows, cols), np.float32)
        self.fields = np.full((n, 2 * rows, 2 * cols), np.inf, np.float32)
        self._passable = np.zeros((2 * rows, 2 * cols), np.bool_)
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
            self._last_forward[i] = False

    def observe(self, depth: np.ndarray, pos: np.ndarray, heading: np.ndarray) -> np.ndarray:
        """Mark the cells behind the vertical faces in the depth observations [N, H, W] (normalised from
        [min_depth, max_depth], as the simulator gives them) seen from `pos` [N, 2] facing `heading` [N];
        returns which environments' maps grew [N]."""
        cfg = self.sim.config
        # At either end of the range the depth was clipped: nothing hit, or nearer than min_depth.
        valid = (depth > 0) & (depth < 1 - 1e-3)
        depth = cfg.min_depth + depth * (cfg.max_depth - cfg.min_depth)
        height = cfg.sensor_height + depth * self._tan_up[None, :, None]
        reach = depth * self._stretch[None, None, :]  # horizontal distance of each pixel's point
        angle = heading[:, None] - self._column_angle[None, :]  # [N, W]
        cos_a = np.broadcast_to(np.cos(angle)[:, None, :], reach.shape)
        sin_a = np.broadcast_to(np.sin(angle)[:, None, :], reach.shape)
        x = pos[:, 0, None, None] + reach * cos_a
        y = pos[:, 1, None, None] + reach * sin_a
        on_face = np.zeros_like(valid)
        on_face[:, :-1] = np.abs(reach[:, :-1] - reach[:, 1:]) < FACE_TOLERANCE
        row, col, one_line = _cell_behind(x, y, cos_a, sin_a, float(self.cell_size))
        marks = valid & on_face & one_line & (height > FLOOR_CLEARANCE) & (height < cfg.agent_height)
        grew = np.zeros(len(pos), np.bool_)
        for i in range(len(pos)):
            grew[i] = _mark(self.solid, i, row[i].ravel(), col[i].ravel(), marks[i].ravel())
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
                self.solid[i, row, col] = 1.0
                grew[i] = True
        self._last_pos[:] = pos
        return grew

    def record_actions(self, forward: np.ndarray) -> None:
        """Which environments [N] were just sent forward, for the next bump()."""
        self._last_forward[:] = forward

    def replan(self, envs: np.ndarray, goals: np.ndarray) -> None:
        """Recompute the distance fields of `envs` to their goals [N, 2] on their current maps."""
        for i in envs:
            _plan(
                self.solid,
                i,
                self.cell_size,
                self.nav_cell,
                self.path_radius,
                goals[i, 0],
                goals[i, 1],
                self._passable,
                self.fields,
                MOVES,
                MOVE_LENGTHS,
                MOVE_CROSSED,
                MOVE_CROSSED_COUNT,
            )


def _cell_behind(x, y, cos_a, sin_a, cell_size):
    """(row, col, on_one_line) of the solid cell behind each face point: the face lies on a grid line
    x = k * cell or y = k * cell, and the cell is on the far side of it along the ray."""
    fx, fy = x / cell_size, y / cell_size
    on_x = np.abs(fx - np.round(fx)) * cell_size < FACE_TOLERANCE
    on_y = np.abs(fy - np.round(fy)) * cell_size < FACE_TOLERANCE
    col = np.where(on_x, np.round(fx) - (cos_a < 0), np.floor(fx)).astype(np.int64)
    row = np.where(on_y, np.round(fy) - (sin_a < 0), np.floor(fy)).astype(np.int64)
    return row, col, on_x ^ on_y


@njit(cache=True)
def _mark(solid, env, rows, cols, marks):
    """Mark cells (rows[k], cols[k]) where marks[k] solid in map `env`; whether any was new."""
    height, width = solid.shape[1], solid.shape[2]
    grew = False
    for k in range(rows.shape[0]):
        r, c = rows[k], cols[k]
        if marks[k] and 0 <= r < height and 0 <= c < width and solid[env, r, c] <= 0:
            solid[env, r, c] = 1.0
            grew = True
    return grew


@njit(cache=True)
def _plan(
    solid,
    env,
    cell_size,
    nav_cell,
    path_radius,
    goal_x,
    goal_y,
    passable,
    fields,
    moves,
    lengths,
    crossed,
    crossed_count,
):
    """Dijkstra from the goal's navigation cell over map `env`, as NavGrid builds its graph: cells whose
    centre is `path_radius` clear, joined by the 16 moves whose crossed cells are passable too."""
    rows, cols = fields.shape[1], fields.shape[2]
    for r in range(rows):
        for c in range(cols):
            x, y = np.float32((c + 0.5) * nav_cell), np.float32((r + 0.5) * nav_cell)
            passable[r, c] = kernels.disc_free(solid, cell_size, env, x, y, path_radius)
            fields[env, r, c] = np.inf
    goal_row, goal_col = math.floor(goal_y / nav_cell), math.floor(goal_x / nav_cell)
    fields[env, goal_row, goal_col] = 0.0
    heap = [(np.float32(0.0), goal_row * cols + goal_col)]
    while len(heap) > 0:
        distance, index = heapq.heappop(heap)
        r, c = index // cols, index % cols
        if distance > fields[env, r, c]:
            continue
        for k in range(moves.shape[0]):
            rr, cc = r + moves[k, 0], c + moves[k, 1]
            if rr < 0 or rr >= rows or cc < 0 or cc >= cols or not passable[rr, cc]:
                continue
            clear = True
            for j in range(crossed_count[k]):
                if not passable[r + crossed[k, j, 0], c + crossed[k, j, 1]]:
                    clear = False
            if not clear:
                continue
            through = distance + lengths[k] * nav_cell
            if through < fields[env, rr, cc]:
                fields[env, rr, cc] = through
                heapq.heappush(heap, (through, rr * cols + cc))
