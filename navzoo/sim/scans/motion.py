"""habitat's sliding move on a layered navmesh (docs/design/habitat-sim-rules.md §5): Detour's
moveAlongSurface over the standing places of navzoo.sim.scans.navmesh, for N agents in one numba call.

From the start place, the search visits linked places through the edges that touch the circle around the
move (centred half-way, radius half the move + 1 mm). If the target lies in a visited place's cell, the
agent gets there; otherwise it stops at the point of the visited places' wall edges (edges without a link)
closest to the target: the slide along the boundary. Its height is that of the place it ends on, so the
agent follows the floor up ramps and steps. The places of several scenes are concatenated, each scene's
grid given by its origin, shape and cell size.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

SEARCH_SLACK = 0.001  # metres added to the search circle's radius, as Detour does
INSIDE = 1e-4  # metres a slid point is kept inside its place's cell, so its column is the place's
MAX_VISITED = 1024  # places one move may visit (a 0.25 m move visits a few dozen 0.05 m cells)


def slide(
    scene: np.ndarray,
    place: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    grids: tuple[np.ndarray, np.ndarray, np.ndarray],
    places: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move agents standing on `place` [N] (global place index) of `scene` [N] from `start` [N, 2] to
    `end` [N, 2] (x, z metres). `grids` = (origin float64 [S, 3], shape int64 [S, 2], cell float64 [S]);
    `places` = (column int64 [P] within its scene's grid, y float32 [P], neighbours int32 [P, 4] global).
    Returns (where each ends (x, z) float64 [N, 2], its floor height float64 [N], its place int64 [N])."""
    origin, shape, cell = grids
    column, y, neighbours = places
    return _slide(scene, place, start, end, origin, shape, cell, column, y, neighbours)


@njit(cache=True)
def _edge_point(px, pz, ax, az, bx, bz):
    """The point of segment a-b closest to p."""
    dx, dz = bx - ax, bz - az
    length = dx * dx + dz * dz
    t = 0.0 if length == 0 else ((px - ax) * dx + (pz - az) * dz) / length
    t = min(max(t, 0.0), 1.0)
    return ax + t * dx, az + t * dz


@njit(cache=True)
def _side(d, x0, z0, size):
    """The edge on side `d` (floors.DIRECTIONS: -x, +z, +x, -z) of the cell with corner (x0, z0)."""
    if d == 0:
        return x0, z0, x0, z0 + size
    if d == 1:
        return x0, z0 + size, x0 + size, z0 + size
    if d == 2:
        return x0 + size, z0, x0 + size, z0 + size
    return x0, z0, x0 + size, z0


@njit(cache=True)
def _slide(scene, place, start, end, origin, shape, cell, column, y, neighbours):
    n = len(place)
    out = np.empty((n, 2))
    height = np.empty(n)
    ended = np.empty(n, np.int64)
    queue = np.empty(MAX_VISITED, np.int64)
    visited = np.zeros(len(column), np.bool_)
    for i in range(n):
        s = scene[i]
        size = cell[s]
        cols = shape[s, 1]
        sx, sz, ex, ez = start[i, 0], start[i, 1], end[i, 0], end[i, 1]
        mx, mz = (sx + ex) / 2, (sz + ez) / 2
        radius = math.hypot(ex - sx, ez - sz) / 2 + SEARCH_SLACK
        end_col = math.floor((ex - origin[s, 0]) / size)
        end_row = math.floor((ez - origin[s, 2]) / size)
        queue[0] = place[i]
        visited[place[i]] = True
        head, tail = 0, 1
        best, best_x, best_z, best_place = np.inf, sx, sz, place[i]
        reached = False
        while head < tail:
            p = queue[head]
            head += 1
            row, col = column[p] // cols, column[p] % cols
            if row == end_row and col == end_col:
                out[i, 0], out[i, 1], height[i], ended[i] = ex, ez, y[p], p
                reached = True
                break
            x0, z0 = origin[s, 0] + col * size, origin[s, 2] + row * size
            for d in range(4):
                ax, az, bx, bz = _side(d, x0, z0, size)
                q = neighbours[p, d]
                if q < 0:  # a wall edge: where the slide may stop
                    cx, cz = _edge_point(ex, ez, ax, az, bx, bz)
                    distance = (cx - ex) ** 2 + (cz - ez) ** 2
                    if distance < best:
                        best, best_x, best_z, best_place = distance, cx, cz, p
                elif not visited[q] and tail < MAX_VISITED:
                    cx, cz = _edge_point(mx, mz, ax, az, bx, bz)
                    if (cx - mx) ** 2 + (cz - mz) ** 2 <= radius * radius:
                        visited[q] = True
                        queue[tail] = q
                        tail += 1
        for k in range(tail):
            visited[queue[k]] = False
        if not reached:
            row, col = column[best_place] // cols, column[best_place] % cols
            x0, z0 = origin[s, 0] + col * size, origin[s, 2] + row * size
            out[i, 0] = min(max(best_x, x0 + INSIDE), x0 + size - INSIDE)
            out[i, 1] = min(max(best_z, z0 + INSIDE), z0 + size - INSIDE)
            height[i], ended[i] = y[best_place], best_place
    return out, height, ended
