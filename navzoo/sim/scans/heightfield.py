"""Triangles voxelised into solid spans per grid column, the first step of habitat's navmesh build
(docs/design/habitat-sim-rules.md §4.2, steps 1-3).

Every triangle is clipped to each `cell`-wide column of the horizontal (x, z) grid it overlaps; the clipped
piece's height range, quantised to `cell_height`, is a solid span of that column. Clipping catches what
vertical rays would miss: a wall is edge-on to a vertical ray, so a thin wall shell would let the floor
run through it, while clipping gives it a span in every column it crosses. A span is walkable where its
top came from a triangle facing up within the slope limit. Overlapping spans of a column merge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

SNAP = 1e-4  # grid coordinates this close to a grid line are on it (vertices of grid-aligned scenes)


@dataclass(frozen=True)
class Heightfield:
    """The merged solid spans of every column, sorted by column then height.

    Columns are numbered row * cols + col, row along z, col along x, from `origin` (x, y, z of the grid's
    corner, the vertices' minimum). A span covers [bottom, top) in cell-height units above origin y;
    `top_y` is the exact height of its top surface in metres (world y); `walkable` flags floors.
    """

    origin: np.ndarray  # float64 [3]
    cell: float
    cell_height: float
    shape: tuple[int, int]  # (rows, cols)
    column: np.ndarray  # int64 [S]
    bottom: np.ndarray  # int32 [S]
    top: np.ndarray  # int32 [S]
    top_y: np.ndarray  # float32 [S]
    walkable: np.ndarray  # bool [S]


def walkable_triangles(vertices: np.ndarray, faces: np.ndarray, max_slope_deg: float) -> np.ndarray:
    """bool [F]: the triangle's normal (by its winding, counter-clockwise seen from the front) points up
    within `max_slope_deg` of vertical. Degenerate triangles are not walkable."""
    v = vertices.astype(np.float64)[faces]
    normal = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    length = np.linalg.norm(normal, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        up = normal[:, 1] / length
    return np.nan_to_num(up) > math.cos(math.radians(max_slope_deg))


def build_heightfield(
    vertices: np.ndarray,
    faces: np.ndarray,
    walkable: np.ndarray,
    cell: float,
    cell_height: float,
    climb_cells: int,
) -> Heightfield:
    """Voxelise the triangles (`walkable` [F] from walkable_triangles) and merge each column's spans: two
    spans that overlap or touch become one; the merged span is walkable when a walkable member's top is
    within `climb_cells` of its top (Recast's flag merge), then a non-walkable span whose top is within
    `climb_cells` above a walkable span below it becomes walkable (curbs, stair steps)."""
    vertices = vertices.astype(np.float64)
    origin = vertices.min(0)
    extent = vertices.max(0) - origin
    cols = max(1, math.ceil(extent[0] / cell - SNAP))
    rows = max(1, math.ceil(extent[2] / cell - SNAP))
    grid = (vertices - origin) / np.array([cell, cell_height, cell])
    column, bottom, top, top_y, flag = _rasterise(grid, faces.astype(np.int64), walkable, rows, cols)
    top_y = top_y * cell_height + origin[1]
    order = np.lexsort((bottom, column))
    column, bottom, top, top_y, flag = column[order], bottom[order], top[order], top_y[order], flag[order]
    column, bottom, top, top_y, flag = _merge(column, bottom, top, top_y, flag, climb_cells)
    flag = _climbable_obstacles(column, top, flag, climb_cells)
    return Heightfield(origin, cell, cell_height, (rows, cols), column, bottom, top, top_y, flag)


def _merge(column, bottom, top, top_y, flag, climb_cells: int):
    """Merge the overlapping or touching spans of each column (input sorted by column, bottom)."""
    if len(column) == 0:
        return column, bottom, top, top_y, flag
    # A running maximum of tops within each column (columns sorted, so an offset per column separates them).
    offset = column.astype(np.int64) * (int(top.max()) + 2)
    reach = np.maximum.accumulate(offset + top)
    starts = np.ones(len(column), dtype=bool)
    starts[1:] = (column[1:] != column[:-1]) | (offset[1:] + bottom[1:] > reach[:-1])
    first = np.flatnonzero(starts)
    merged_top = np.maximum.reduceat(top, first)
    group = np.cumsum(starts) - 1
    # Walkable wins when its top is within the climb of the merged top.
    near_top = flag & (top >= merged_top[group] - climb_cells)
    merged_flag = np.logical_or.reduceat(near_top, first)
    merged_y = np.maximum.reduceat(np.where(top == merged_top[group], top_y, -np.inf), first)
    return column[first], bottom[first], merged_top, merged_y.astype(np.float32), merged_flag


def _climbable_obstacles(column, top, flag, climb_cells: int) -> np.ndarray:
    """A span right above a walkable one in its column, with its top at most a climb higher, is walkable.
    Uses the flags from before this filter, so it does not chain."""
    result = flag.copy()
    above = np.zeros(len(column), dtype=bool)
    above[1:] = (column[1:] == column[:-1]) & flag[:-1] & ~flag[1:] & (top[1:] - top[:-1] <= climb_cells)
    result[above] = True
    return result


@njit(cache=True)
def _split(poly, n, axis, at, below, above):
    """Split the convex polygon poly[:n] by the plane `axis` = at into the parts below and above it; returns
    their vertex counts."""
    nb = 0
    na = 0
    for i in range(n):
        j = (i + 1) % n
        di = poly[i, axis] - at
        dj = poly[j, axis] - at
        if di <= 0:
            below[nb] = poly[i]
            nb += 1
        if di >= 0:
            above[na] = poly[i]
            na += 1
        if (di < 0 and dj > 0) or (di > 0 and dj < 0):
            t = di / (di - dj)
            point = poly[i] + (poly[j] - poly[i]) * t
            point[axis] = at
            below[nb] = point
            above[na] = point
            nb += 1
            na += 1
    return nb, na


@njit(cache=True)
def _rasterise(grid, faces, walkable, rows, cols):
    """Spans (column, bottom, top, exact top in cell heights, walkable) of every triangle piece, with
    coordinates in grid units (x and z in cells, y in cell heights)."""
    capacity = max(1024, 4 * len(faces))
    column = np.empty(capacity, np.int64)
    bottom = np.empty(capacity, np.int32)
    top = np.empty(capacity, np.int32)
    top_y = np.empty(capacity, np.float64)
    flag = np.empty(capacity, np.bool_)
    count = 0
    triangle = np.empty((3, 3))
    row_piece = np.empty((12, 3))
    rest = np.empty((12, 3))
    cell_piece = np.empty((12, 3))
    rest2 = np.empty((12, 3))
    scratch = np.empty((12, 3))
    for f in range(len(faces)):
        for k in range(3):
            triangle[k] = grid[faces[f, k]]
        lo_x = min(triangle[0, 0], triangle[1, 0], triangle[2, 0])
        hi_x = max(triangle[0, 0], triangle[1, 0], triangle[2, 0])
        lo_z = min(triangle[0, 2], triangle[1, 2], triangle[2, 2])
        hi_z = max(triangle[0, 2], triangle[1, 2], triangle[2, 2])
        # An edge lying on a grid line does not reach into the next column; a face in it keeps one column.
        x0 = max(0, math.floor(lo_x + SNAP))
        x1 = min(cols - 1, max(x0, math.ceil(hi_x - SNAP) - 1))
        z0 = max(0, math.floor(lo_z + SNAP))
        z1 = min(rows - 1, max(z0, math.ceil(hi_z - SNAP) - 1))
        n = 3
        rest[:3] = triangle
        for z in range(z0, z1 + 1):
            scratch[:n] = rest[:n]
            at = float(z + 1) if z < z1 else math.inf
            n_row, n = _split(scratch, n, 2, at, row_piece, rest)
            if n_row < 3:
                continue
            m = n_row
            rest2[:m] = row_piece[:m]
            for x in range(x0, x1 + 1):
                scratch[:m] = rest2[:m]
                at_x = float(x + 1) if x < x1 else math.inf
                n_cell, m = _split(scratch, m, 0, at_x, cell_piece, rest2)
                if n_cell < 3:
                    continue
                y_lo = cell_piece[0, 1]
                y_hi = cell_piece[0, 1]
                for k in range(1, n_cell):
                    y_lo = min(y_lo, cell_piece[k, 1])
                    y_hi = max(y_hi, cell_piece[k, 1])
                if count == capacity:
                    capacity *= 2
                    column = _grow(column, capacity)
                    bottom = _grow(bottom, capacity)
                    top = _grow(top, capacity)
                    top_y = _grow(top_y, capacity)
                    flag = _grow(flag, capacity)
                s_lo = math.floor(y_lo + SNAP)
                column[count] = z * cols + x
                bottom[count] = s_lo
                top[count] = max(math.ceil(y_hi - SNAP), s_lo + 1)
                top_y[count] = y_hi
                flag[count] = walkable[f]
                count += 1
    return column[:count], bottom[:count], top[:count], top_y[:count], flag[:count]


@njit(cache=True)
def _grow(array, capacity):
    grown = np.empty(capacity, array.dtype)
    grown[: len(array)] = array
    return grown
