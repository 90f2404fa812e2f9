"""The renderer as one numba kernel for simulators on the CPU: rays cast, depth and RGB written in place.

It computes what render.py's tensor kernels and `shade` compute, pixel for pixel: the same grid walk (x
and y crossings in the same order, ties included), the same running maximum of slopes, the same pixel
resolution and shading, in the same float32 arithmetic, so the images are identical. Each ray stops at the
first wall it meets, where the tensor version walks a fixed number of crossings for every ray at once and
writes every intermediate to memory; and the observations are written once, in their final layout. The
environments are split over numba's threads when there are several. Compiled on first use and cached on
disk.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

FLOOR_OR_TOP, FACE_X, FACE_Y, CEILING, NOTHING = 0, 1, 2, 3, 4  # surface kinds, as in render.py
PLAIN, STRIPES_U, CHECKER, STRIPES_V = 0, 1, 2, 3  # texture patterns, as in materials.py
FAR = np.float32(1e3)  # shading clamps ray lengths here, as render.shade does


@njit(cache=True)
def _cast_ray(scene, ray, camera, column, full, scratch, t_out, kind_out, surface_out, with_surfaces):
    """One column's ray: the distance to what each pixel row sees (bottom row first) and, with surfaces,
    its kind and material."""
    heights, ceilings, materials, rooms, wall_materials, cell = scene
    gx, gy, dx, dy, slot = ray
    focal_stretch, slope, inv_slope, inv_slope_up, eye, ceiling_id = camera
    seg_start, seg_height, seg_flat, seg_is_x, covered = scratch
    rows, cols = heights.shape[1], heights.shape[2]
    h = t_out.shape[0]
    ceiling = ceilings[slot]
    # Crossings of each axis: first + k * spacing (render._crossings).
    step_x = 1 if dx >= 0 else -1
    step_y = 1 if dy >= 0 else -1
    speed_x = max(abs(dx), np.float32(1e-9))
    speed_y = max(abs(dy), np.float32(1e-9))
    fx, fy = np.float32(math.floor(gx)), np.float32(math.floor(gy))
    frac_x = fx + np.float32(1) - gx if dx >= 0 else gx - fx
    frac_y = fy + np.float32(1) - gy if dy >= 0 else gy - fy
    first_x, first_y = frac_x * cell / speed_x, frac_y * cell / speed_y
    spacing_x, spacing_y = cell / speed_x, cell / speed_y
    merge_spacing = (first_y + spacing_y) - first_y
    reach = min(first_x + np.float32(full - 1) * spacing_x, first_y + np.float32(full - 1) * spacing_y)
    # Walk the segments in order until a wall (or the end of the range).
    col, row = int(fx), int(fy)
    start = np.float32(0)
    ix = iy = count = 0
    running = np.float32(-np.inf)
    previous_is_x = 0  # the agent's own cell: never a face, so its kind never reads this
    half = np.float32(h / 2 - 0.5)
    tiny = np.float32(1e-6)
    while start < reach:
        tx = first_x + np.float32(ix) * spacing_x
        ty = first_y + np.float32(iy) * spacing_y
        # The next crossing: x comes first unless more y crossings lie before it (render._merge).
        y_before_x = min(max(math.ceil((tx - first_y) / merge_spacing), 0), full) if ix < full else full
        take_x = ix < full and iy >= y_before_x
        end = tx if take_x else ty
        inside = 0 <= row < rows and 0 <= col < cols
        flat = (slot * rows + min(max(row, 0), rows - 1)) * cols + min(max(col, 0), cols - 1)
        height = heights.flat[flat] if inside else ceiling
        rise = height - eye
        # Steepest slope that touches the box: its top edge at entry (tall boxes) or at exit (low ones).
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
    surface_of = -1  # the segment whose material `surface` holds: neighbouring pixels share segments
    surface = 0
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
        t_out[p] = min(t, t_ceiling)
        if with_surfaces:
            kind = (FACE_X if seg_is_x[k] else FACE_Y) if face else FLOOR_OR_TOP
            if t_ceiling < t:
                kind = CEILING
            if math.isinf(t_out[p]):
                kind = NOTHING
            kind_out[p] = kind
            if k != surface_of:
                material = materials.flat[seg_flat[k]]
                room = max(rooms.flat[seg_flat[max(k - 1, 0)]], 0)
                surface = wall_materials[slot, room] if material < 0 else material
                surface_of = k
            surface_out[p] = ceiling_id if kind == CEILING else surface


@njit(cache=True)
def render_serial(scene, camera, shading, rays, slots, stretch, full, depth_range, depth_out, rgb_out):
    """Render environments i: rays (gx, gy, dx, dy), each [N, W] (grid position in cells, direction), in
    scene slots [N], into depth_out [N, H, W] (z-depth normalised by depth_range = (min, max, max - min),
    top row first) and rgb_out [N, H, W, 3] uint8, as BatchSim.observe lays them out; an empty output is
    skipped. scene, camera and shading are tuples of the atlas's, the camera's and the material table's
    arrays (render.observe builds them)."""
    for i in range(slots.shape[0]):
        _render_env(i, scene, camera, shading, rays, slots, stretch, full, depth_range, depth_out, rgb_out)


@njit(cache=True, parallel=True)
def render_parallel(scene, camera, shading, rays, slots, stretch, full, depth_range, depth_out, rgb_out):
    """render_serial with the environments split over numba's threads. It has a kernel of its own because
    with one thread the serial one never starts numba's thread pool, whose idle threads would spin beside
    torch's (two training workers on two cores ran 4x slower that way)."""
    for i in prange(slots.shape[0]):
        _render_env(i, scene, camera, shading, rays, slots, stretch, full, depth_range, depth_out, rgb_out)


@njit(cache=True)
def _render_env(i, scene, camera, shading, rays, slots, stretch, full, depth_range, depth_out, rgb_out):
    gx, gy, dx, dy = rays
    min_depth, max_depth, depth_scale = depth_range
    slope, eye = camera[1], camera[4]
    cell = scene[5]
    w, h = gx.shape[1], slope.shape[1]
    full_segments = 2 * full
    with_depth, with_rgb = depth_out.shape[0] > 0, rgb_out.shape[0] > 0
    scratch = (
        np.empty(full_segments, np.float32),
        np.empty(full_segments, np.float32),
        np.empty(full_segments, np.int64),
        np.empty(full_segments, np.int64),
        np.empty(full_segments, np.int64),
    )
    t_col = np.empty(h, np.float32)
    kind_col = np.empty(h, np.int64)
    surface_col = np.empty(h, np.int64)
    for c in range(w):
        ray = (gx[i, c], gy[i, c], dx[i, c], dy[i, c], slots[i])
        _cast_ray(scene, ray, camera, c, full, scratch, t_col, kind_col, surface_col, with_rgb)
        if with_depth:
            for p in range(h):
                z = min(max(t_col[p] / stretch[c], min_depth), max_depth)
                depth_out[i, h - 1 - p, c] = (z - min_depth) / depth_scale  # images are top row first
        if with_rgb:
            # One call per column: a call per pixel costs more than the shading (arrays passed to a
            # function are reference-counted on every call).
            origin = (gx[i, c] * cell, gy[i, c] * cell, dx[i, c], dy[i, c])
            _shade_column(t_col, kind_col, surface_col, origin, slope[c], eye, shading, rgb_out[i, :, c])


@njit(cache=True)
def _shade_column(t_col, kind_col, surface_col, origin, slope, eye, shading, out):
    """render.shade for one image column (pixels bottom row first) into out [H, 3] (top row first):
    material colour, texture pattern and a simple light. The same float32 arithmetic, skipping the
    coordinates a pattern does not read; the pattern's parity picks the colour, which is what render.shade's
    blend with a weight of 0 or 1 gives exactly."""
    colors, alt_colors, patterns, periods, light = shading
    x0, y0, dx, dy = origin
    h = t_col.shape[0]
    for p in range(h):
        t, kind, surface = t_col[p], kind_col[p], surface_col[p]
        pattern = patterns[surface]
        alt = 0
        if pattern != PLAIN:
            x = x0 + dx * min(t, FAR)
            y = y0 + dy * min(t, FAR)
            period = periods[surface]
            if pattern in (STRIPES_U, CHECKER):
                u = y if kind == FACE_X else x
                alt += math.floor(np.float32(2) * u / period)
            if pattern in (STRIPES_V, CHECKER):
                v = eye + slope[p] * min(t, FAR) if kind in (FACE_X, FACE_Y) else y
                alt += math.floor(np.float32(2) * v / period)
            alt &= 1
        lit = np.float32(1) - np.float32(0.02) * min(max(t, np.float32(0)), np.float32(10))
        brightness = light[kind] * lit
        for channel in range(3):
            color = alt_colors[surface, channel] if alt else colors[surface, channel]
            out[h - 1 - p, channel] = np.uint8(min(max(color * brightness, np.float32(0)), np.float32(255)))
