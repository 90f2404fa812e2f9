"""Where an agent can stand in a heightfield, and which standing places are neighbours: habitat's navmesh
filters on the solid spans (docs/design/habitat-sim-rules.md §4.2, steps 4-6).

A floor is the top of a walkable span; its ceiling is the bottom of the next span up in the column. Every
floor keeps its own layer, so storeys, a table top and the floor under it stay apart.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from navzoo.sim.scans.heightfield import Heightfield

OPEN = 1 << 30  # the ceiling of a column's highest span: open sky
# Neighbour directions, as (d_row, d_col) = (dz, dx): -x, +z, +x, -z. Direction (d + 1) % 4 turns a quarter.
DIRECTIONS = ((0, -1), (1, 0), (0, 1), (-1, 0))


def column_starts(column: np.ndarray, count: int) -> np.ndarray:
    """int64 [count + 1]: the items of column c (in an array sorted by column) are start[c]:start[c + 1]."""
    return np.searchsorted(column, np.arange(count + 1)).astype(np.int64)


def standing_spans(field: Heightfield, height_cells: int, climb_cells: int) -> np.ndarray:
    """bool [S]: the walkable spans with room above (`height_cells` to the next span) that are not ledges:
    no neighbour drops by more than `climb_cells`, and the floors within a climb around it span no more
    than a climb (too steep otherwise)."""
    rows, cols = field.shape
    starts = column_starts(field.column, rows * cols)
    return _standing(
        starts, field.column, field.bottom, field.top, field.walkable, rows, cols, height_cells, climb_cells
    )


def connect(
    column: np.ndarray,
    floor: np.ndarray,
    ceiling: np.ndarray,
    shape: tuple[int, int],
    height_cells: int,
    climb_cells: int,
) -> np.ndarray:
    """int32 [N, 4]: for each standing place (sorted by column then height), its neighbour in each of
    DIRECTIONS (-1: none). Neighbours share `height_cells` of headroom and differ by at most a climb."""
    rows, cols = shape
    starts = column_starts(column, rows * cols)
    return _connect(starts, column, floor, ceiling, rows, cols, height_cells, climb_cells)


@njit(cache=True)
def _ceiling(starts, bottom, column, s):
    return bottom[s + 1] if s + 1 < starts[column + 1] else OPEN


@njit(cache=True)
def _standing(starts, column, bottom, top, walkable, rows, cols, height_cells, climb_cells):
    keep = np.zeros(len(column), np.bool_)
    for s in range(len(column)):
        if not walkable[s]:
            continue
        c = column[s]
        floor = top[s]
        ceiling = _ceiling(starts, bottom, c, s)
        if ceiling - floor < height_cells:
            continue
        row, col = c // cols, c % cols
        lowest_drop = OPEN
        low = floor
        high = floor
        for d in range(4):
            r = row + (1 if d == 1 else -1 if d == 3 else 0)
            k = col + (1 if d == 2 else -1 if d == 0 else 0)
            if r < 0 or r >= rows or k < 0 or k >= cols:
                lowest_drop = min(lowest_drop, -climb_cells - floor)
                continue
            n = r * cols + k
            # The open space below the neighbour's lowest span (or an empty column) is a drop.
            under_top = bottom[starts[n]] if starts[n] < starts[n + 1] else OPEN
            if min(ceiling, under_top) - max(floor, -climb_cells) > height_cells:
                lowest_drop = min(lowest_drop, -climb_cells - floor)
            for t in range(starts[n], starts[n + 1]):
                n_floor = top[t]
                n_ceiling = _ceiling(starts, bottom, n, t)
                if min(ceiling, n_ceiling) - max(floor, n_floor) > height_cells:
                    drop = n_floor - floor
                    lowest_drop = min(lowest_drop, drop)
                    if abs(drop) <= climb_cells:
                        low = min(low, n_floor)
                        high = max(high, n_floor)
        if lowest_drop < -climb_cells or high - low > climb_cells:
            continue
        keep[s] = True
    return keep


@njit(cache=True)
def _connect(starts, column, floor, ceiling, rows, cols, height_cells, climb_cells):
    neighbours = np.full((len(column), 4), -1, np.int32)
    for i in range(len(column)):
        c = column[i]
        row, col = c // cols, c % cols
        for d in range(4):
            r = row + (1 if d == 1 else -1 if d == 3 else 0)
            k = col + (1 if d == 2 else -1 if d == 0 else 0)
            if r < 0 or r >= rows or k < 0 or k >= cols:
                continue
            n = r * cols + k
            for j in range(starts[n], starts[n + 1]):
                headroom = min(ceiling[i], ceiling[j]) - max(floor[i], floor[j])
                if headroom >= height_cells and abs(floor[i] - floor[j]) <= climb_cells:
                    neighbours[i, d] = j
                    break
    return neighbours
