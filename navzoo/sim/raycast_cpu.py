"""The renderer's ray casting as one numba kernel, for simulators on the CPU.

It computes what render.py's tensor kernels compute, ray by ray: the same grid walk (x and y crossings in
the same order, ties included), the same running maximum of slopes and the same pixel resolution, in the
same float32 arithmetic. Each ray stops at the first wall it meets, where the tensor version walks a fixed
number of crossings for every ray at once and writes every intermediate to memory; that difference is the
speed-up. Compiled on first use and cached on disk.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

FLOOR_OR_TOP, FACE_X, FACE_Y, CEILING, NOTHING = 0, 1, 2, 3, 4  # surface kinds, as in render.py


@njit(cache=True)
def cast_rays(
    heights,
    ceilings,
    materials,
    rooms,
    wall_materials,
    cell,
    gx,
    gy,
    dx,
    dy,
    slots,
    columns,
    focal_stretch,
    slope,
    inv_slope,
    inv_slope_up,
    eye,
    full,
    ceiling_id,
    with_surfaces,
    t_out,
    kind_out,
    surface_out,
):
    """Cast rays r (grid position gx, gy in cells, direction dx, dy, scene slot, image column) and write,
    for every pixel row of each ray's column (bottom first), the horizontal distance to what it sees
    (t_out [R, H]) and, with_surfaces, its surface kind and material (kind_out, surface_out)."""
    rows, cols = heights.shape[1], heights.shape[2]
    h = t_out.shape[1]
    max_segments = 2 * full
    seg_start = np.empty(max_segments, np.float32)
    seg_height = np.empty(max_segments, np.float32)
    seg_flat = np.empty(max_segments, np.int64)
    seg_is_x = np.empty(max_segments, np.int64)
    covered = np.empty(max_segments, np.int64)
    half = np.float32(h / 2 - 0.5)
    for r in range(gx.shape[0]):
        slot, column = slots[r], columns[r]
        ceiling = ceilings[slot]
        # Crossings of each axis: first + k * spacing (render._crossings).
        step_x = 1 if dx[r] >= 0 else -1
        step_y = 1 if dy[r] >= 0 else -1
        speed_x = max(abs(dx[r]), np.float32(1e-9))
        speed_y = max(abs(dy[r]), np.float32(1e-9))
        fx, fy = np.float32(math.floor(gx[r])), np.float32(math.floor(gy[r]))
        frac_x = fx + np.float32(1) - gx[r] if dx[r] >= 0 else gx[r] - fx
        frac_y = fy + np.float32(1) - gy[r] if dy[r] >= 0 else gy[r] - fy
        first_x, first_y = frac_x * cell / speed_x, frac_y * cell / speed_y
        spacing_x, spacing_y = cell / speed_x, cell / speed_y
        ty0, ty1 = first_y, first_y + spacing_y
        merge_spacing = ty1 - ty0
        reach = min(first_x + np.float32(full - 1) * spacing_x, first_y + np.float32(full - 1) * spacing_y)
        # Walk the segments in order until a wall (or the end of the range).
        col, row = int(fx), int(fy)
        start = np.float32(0)
        ix = iy = 0
        count = 0
        running = np.float32(-np.inf)
        previous_is_x = 0  # the agent's own cell: never a face, so its kind never reads this
        while start < reach:
            tx = first_x + np.float32(ix) * spacing_x
            ty = first_y + np.float32(iy) * spacing_y
            # The next crossing: x comes first unless more y crossings lie before it (render._merge).
            y_before_x = min(max(math.ceil((tx - ty0) / merge_spacing), 0), full) if ix < full else full
            take_x = ix < full and iy >= y_before_x
            end = tx if take_x else ty
            inside = 0 <= row < rows and 0 <= col < cols
            flat = (slot * rows + min(max(row, 0), rows - 1)) * cols + min(max(col, 0), cols - 1)
            height = heights.flat[flat] if inside else ceiling
            rise = height - eye
            # Steepest slope that touches the box: its top edge at entry (tall boxes) or at exit (low ones).
            tiny = np.float32(1e-6)
            threshold = rise / max(start, tiny) if rise >= 0 else rise / max(end, tiny)
            running = max(running, threshold)
            seg_start[count], seg_height[count], seg_flat[count] = start, height, flat
            seg_is_x[count] = previous_is_x
            covered[count] = min(max(h - math.ceil(half - running * focal_stretch[column]), 0), h)
            count += 1
            if height >= ceiling:
                break
            if take_x:
                ix += 1
                col += step_x
            else:
                iy += 1
                row += step_y
            previous_is_x = 1 if take_x else 0
            start = end
        # Pixel p sees the first segment whose running maximum covers it (render._resolve_pixels).
        s = 0
        for p in range(h):
            while s < count and covered[s] <= p:
                s += 1
            k = min(s, count - 1)
            hit_height, hit_start = seg_height[k], seg_start[k]
            face = eye + slope[column, p] * hit_start <= hit_height
            t = hit_start if face else (hit_height - eye) * inv_slope[column, p]
            if s >= count:
                t = np.float32(np.inf)
            t_ceiling = (ceiling - eye) * inv_slope_up[column, p]
            on_ceiling = t_ceiling < t
            t_out[r, p] = min(t, t_ceiling)
            if with_surfaces:
                kind = (FACE_X if seg_is_x[k] else FACE_Y) if face else FLOOR_OR_TOP
                if on_ceiling:
                    kind = CEILING
                if math.isinf(t_out[r, p]):
                    kind = NOTHING
                kind_out[r, p] = kind
                material = materials.flat[seg_flat[k]]
                room = max(rooms.flat[seg_flat[max(k - 1, 0)]], 0)
                surface = wall_materials[slot, room] if material < 0 else material
                surface_out[r, p] = ceiling_id if kind == CEILING else surface
