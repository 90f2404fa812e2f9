"""The simulator's geometry as numba functions, for loops over single points on the CPU.

They compute exactly what their tensor versions compute (`physics.disc_free` and `BatchSim._lookup`), in
the same float32 arithmetic, but one point at a time, so a caller can stop at the first blocked point of a
ray instead of testing all of them (navzoo.train.teacher). Compiled on first use and cached on disk.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from navzoo.sim.physics import TOLERANCE


@njit(cache=True, inline="always")
def disc_free(heights, cell_size, slot, x, y, radius) -> bool:
    """Whether a disc of `radius` at (x, y) in scene `slot` of `heights` [P, rows, cols] touches no solid
    cell (physics.disc_free for one point; outside the map counts as solid)."""
    rows, cols = heights.shape[1], heights.shape[2]
    reach = math.ceil(radius / cell_size)
    col0, row0 = math.floor(x / cell_size), math.floor(y / cell_size)
    limit = np.float32(radius - TOLERANCE) ** 2
    zero = np.float32(0)
    for dr in range(-reach, reach + 1):
        r = row0 + dr
        for dc in range(-reach, reach + 1):
            c = col0 + dc
            if 0 <= r < rows and 0 <= c < cols and heights[slot, r, c] <= 0:
                continue
            gap_x = max(np.float32(c * cell_size) - x, x - np.float32((c + 1) * cell_size), zero)
            gap_y = max(np.float32(r * cell_size) - y, y - np.float32((r + 1) * cell_size), zero)
            if gap_x * gap_x + gap_y * gap_y < limit:
                return False
    return True


@njit(cache=True, inline="always")
def geodesic(fields, field, nav_cell, x, y):
    """Geodesic distance at (x, y) in distance field `field` of `fields` [F, rows, cols]: the best of the
    3x3 neighbouring cell centres plus the straight hop to it (BatchSim._lookup for one point)."""
    rows, cols = fields.shape[1], fields.shape[2]
    row, col = math.floor(y / nav_cell), math.floor(x / nav_cell)
    best = np.float32(np.inf)
    for dr in range(-1, 2):
        r = min(max(row + dr, 0), rows - 1)
        for dc in range(-1, 2):
            c = min(max(col + dc, 0), cols - 1)
            hop = math.hypot(np.float32((c + 0.5) * nav_cell) - x, np.float32((r + 0.5) * nav_cell) - y)
            best = min(best, fields[field, r, c] + np.float32(hop))
    return best
