"""The simulator's geometry as numba functions, for loops over single points on the CPU.

They compute exactly what their tensor versions compute (`physics.disc_free` and `ScenePool.geodesic`), in
the same float32 arithmetic, but one point at a time, so a caller can stop at the first blocked point of a
ray instead of testing all of them (navzoo.train.teacher). Compiled on first use and cached on disk.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit

from navzoo.sim.physics import TOLERANCE


@njit(cache=True, inline="always")
def disc_free(heights, cell_size, slot, x, y, radius) -> bool:
    """Whether a disc of `radius` at (x, y) in scene `slot` of `heights` [P, rows, cols] touches no solid
    cell (physics.disc_free for one point; outside the map counts as solid)."""
    limit = np.float32(radius - TOLERANCE) ** 2
    return _disc_free_within(heights, cell_size, slot, x, y, math.ceil(radius / cell_size), limit)


@njit(cache=True, inline="always")
def _disc_free_within(heights, cell_size, slot, x, y, reach, limit) -> bool:
    """disc_free with the cells searched (`reach` either side) and the squared contact distance given."""
    rows, cols = heights.shape[1], heights.shape[2]
    col0, row0 = math.floor(x / cell_size), math.floor(y / cell_size)
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


def move(heights, cell_size: float, slots, pos, delta, radius: float):
    """physics.move on CPU tensors, one disc at a time: the same positions and collision flags, bit for
    bit (every float32 operation and constant as the tensor version has it)."""
    new = torch.empty_like(pos)
    collided = torch.empty(pos.shape[0], dtype=torch.bool)
    f32 = np.float32
    # The tensor version meets these constants as Python floats against float32 tensors: rounded once.
    limits = (f32((radius - TOLERANCE) ** 2), f32(radius**2), f32(radius - TOLERANCE), f32(-TOLERANCE))
    _move_discs(
        heights.numpy(),
        (f32(cell_size), float(cell_size)),
        slots.numpy(),
        pos.numpy(),
        delta.numpy(),
        radius,
        limits,
        new.numpy(),
        collided.numpy(),
    )
    return new, collided


@njit(cache=True)
def _move_discs(heights, cell_sizes, slots, pos, delta, radius, limits, new, collided):
    cell_size, cell_size_f64 = cell_sizes  # float32 in float32 arithmetic, float64 where Python has it
    touch_sq = limits[0]
    reach = math.ceil(radius / cell_size_f64)
    for i in range(pos.shape[0]):
        x, y = pos[i, 0] + delta[i, 0], pos[i, 1] + delta[i, 1]
        free = _disc_free_within(heights, cell_size, slots[i], x, y, reach, touch_sq)
        collided[i] = not free
        if free:
            new[i, 0], new[i, 1] = x, y
            continue
        # Blocked: one axis at a time, each up to exact contact, so the free component slides on.
        new[i, 0], new[i, 1] = pos[i, 0], pos[i, 1]
        for axis in range(2):
            sign = np.float32(np.sign(delta[i, axis]))
            wanted = abs(delta[i, axis])
            travel = _clearance(heights, cell_sizes, slots[i], new[i], axis, sign, radius, limits, wanted)
            new[i, axis] += sign * travel


@njit(cache=True, inline="always")
def _clearance(heights, cell_sizes, slot, p, axis, sign, radius, limits, wanted):
    """physics._clearance for one disc at p: how far (up to `wanted`) it can travel along `axis` in
    direction `sign` before touching a solid cell, at the cell's face or its corner."""
    cell_size, cell_size_f64 = cell_sizes
    _, radius_sq, contact_offset, behind = limits
    rows, cols = heights.shape[1], heights.shape[2]
    along, across = p[axis], p[1 - axis]
    ahead = math.ceil((float(wanted) + radius) / cell_size_f64) + 1
    side = math.ceil(radius / cell_size_f64)
    a0, c0 = math.floor(along / cell_size), math.floor(across / cell_size)
    step = int(sign)
    zero = np.float32(0)
    best = np.float32(np.inf)
    for k in range(ahead + 1):
        a_cell = a0 + step * k
        near_face = np.float32((a_cell if sign > 0 else a_cell + 1) * cell_size)
        gap = (near_face - along) * sign
        for lateral in range(-side, side + 1):
            c_cell = c0 + lateral
            r, c = (a_cell, c_cell) if axis == 1 else (c_cell, a_cell)
            if 0 <= r < rows and 0 <= c < cols and heights[slot, r, c] <= 0:
                continue
            offset = max(
                np.float32(c_cell * cell_size) - across, across - np.float32((c_cell + 1) * cell_size), zero
            )
            if offset < contact_offset and gap >= behind:
                reach = np.float32(math.sqrt(max(radius_sq - offset * offset, zero)))
                best = min(best, max(gap - reach, zero))
    return min(best, wanted)


@njit(cache=True, inline="always")
def geodesic(fields, field, nav_cell, x, y, heights, cell_size, slot, hop_radius):
    """Geodesic distance at (x, y) in distance field `field` of `fields` [F, rows, cols]: the best of the
    3x3 neighbouring cell centres plus the straight hop to it (ScenePool.geodesic for one point).

    With `hop_radius` > 0 a hop counts only if a disc of that radius at its midpoint is clear in map
    `heights[slot]`: on a partial map an unseen cell at a wall corner has a finite distance from the far
    side, and an unchecked hop would lend it through the corner. The scenes' own fields need no check."""
    start, unbounded = np.float32(0), np.float32(np.inf)
    return geodesic_via(
        fields, field, nav_cell, x, y, heights, cell_size, slot, hop_radius, start, unbounded
    )[0]


@njit(cache=True, inline="always")
def geodesic_via(fields, field, nav_cell, x, y, heights, cell_size, slot, hop_radius, offset, limit):
    """(geodesic's distance, the index row * cols + col of the cell it goes through; -1 if none), where
    only a distance d with `offset` + d < `limit` counts: (inf, -1) if none does. A caller that keeps the
    best `offset` + distance so far passes it as `limit`, and the hops that cannot beat it go unchecked."""
    rows, cols = fields.shape[1], fields.shape[2]
    row, col = math.floor(y / nav_cell), math.floor(x / nav_cell)
    best, via = np.float32(np.inf), -1
    for dr in range(-1, 2):
        r = min(max(row + dr, 0), rows - 1)
        for dc in range(-1, 2):
            c = min(max(col + dc, 0), cols - 1)
            cx, cy = np.float32((c + 0.5) * nav_cell), np.float32((r + 0.5) * nav_cell)
            through = fields[field, r, c] + np.float32(math.hypot(cx - x, cy - y))
            # The hop's check, the costly part, only for a hop that would win.
            if (
                through < best
                and offset + through < limit
                and (
                    hop_radius <= 0
                    or disc_free(heights, cell_size, slot, (x + cx) / 2, (y + cy) / 2, hop_radius)
                )
            ):
                best, via = through, r * cols + c
    return best, via
