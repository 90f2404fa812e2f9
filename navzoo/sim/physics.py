"""Agent motion: a disc that cannot overlap obstacle cells and slides along them like habitat's navmesh.

A move whose end point is free is taken whole. A blocked move is resolved one axis at a time, each up to
exact contact: walls are axis-aligned, so the component parallel to the wall carries on, which is what
habitat-sim's try_step does on a navmesh edge.
"""

import math

import torch

# Contact tolerance in metres: a disc resting exactly against a wall (up to float rounding) is not inside it.
TOLERANCE = 1e-4


def disc_free(heights: torch.Tensor, cell_size: float, slots, points, radius: float) -> torch.Tensor:
    """True where a disc of `radius` at `points` [M, 2] in scene `slots` [M] touches no solid cell."""
    _, rows, cols = heights.shape
    reach = math.ceil(radius / cell_size)
    x, y = points[:, 0], points[:, 1]
    col0 = torch.floor(x / cell_size).long()
    row0 = torch.floor(y / cell_size).long()
    offsets = torch.arange(-reach, reach + 1, device=points.device)
    r = row0[:, None, None] + offsets[None, :, None]  # [M, D, 1]
    c = col0[:, None, None] + offsets[None, None, :]  # [M, 1, D]
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    flat = (slots[:, None, None] * rows + r.clamp(0, rows - 1)) * cols + c.clamp(0, cols - 1)
    solid = ~inside | (heights.reshape(-1)[flat] > 0)
    gap_x = torch.maximum(c * cell_size - x[:, None, None], x[:, None, None] - (c + 1) * cell_size).clamp_min(
        0
    )
    gap_y = torch.maximum(r * cell_size - y[:, None, None], y[:, None, None] - (r + 1) * cell_size).clamp_min(
        0
    )
    touching = solid & (gap_x**2 + gap_y**2 < (radius - TOLERANCE) ** 2)
    return ~touching.flatten(1).any(1)


def move(heights, cell_size: float, slots, pos, delta, radius: float):
    """Move discs by `delta` [N, 2] with sliding; returns (new positions, collided flags)."""
    target = pos + delta
    free = disc_free(heights, cell_size, slots, target, radius)
    if bool(free.all()):
        return target, ~free
    blocked = torch.nonzero(~free).squeeze(1)
    s, p, d = slots[blocked], pos[blocked].clone(), delta[blocked]
    # Resolve the blocked moves one axis at a time, each up to exact contact: the free component slides on.
    for axis in (0, 1):
        travel = _clearance(heights, cell_size, s, p, axis, torch.sign(d[:, axis]), radius, d[:, axis].abs())
        p[:, axis] += torch.sign(d[:, axis]) * travel
    new = target.clone()
    new[blocked] = p
    return new, ~free


def _clearance(heights, cell_size: float, slots, pos, axis: int, sign, radius: float, wanted):
    """How far (up to `wanted`) each disc can travel along `axis` in direction `sign` before touching a
    solid cell. Contact with a cell is at its face (lateral offset 0) or its corner (offset < radius)."""
    _, rows, cols = heights.shape
    along, across = pos[:, axis], pos[:, 1 - axis]
    ahead = math.ceil((float(wanted.max()) + radius) / cell_size) + 1
    side = math.ceil(radius / cell_size)
    steps = torch.arange(0, ahead + 1, device=pos.device)
    lateral = torch.arange(-side, side + 1, device=pos.device)
    a_cell = (
        torch.floor(along / cell_size).long()[:, None, None]
        + sign.long()[:, None, None] * steps[None, :, None]
    )
    c_cell = torch.floor(across / cell_size).long()[:, None, None] + lateral[None, None, :]
    a_cell, c_cell = torch.broadcast_tensors(a_cell, c_cell)
    r, c = (a_cell, c_cell) if axis == 1 else (c_cell, a_cell)
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    flat = (slots[:, None, None] * rows + r.clamp(0, rows - 1)) * cols + c.clamp(0, cols - 1)
    solid = ~inside | (heights.reshape(-1)[flat] > 0)
    near_face = torch.where(sign[:, None, None] > 0, a_cell, a_cell + 1) * cell_size
    gap = (near_face - along[:, None, None]) * sign[:, None, None]
    offset = torch.maximum(
        c_cell * cell_size - across[:, None, None], across[:, None, None] - (c_cell + 1) * cell_size
    ).clamp_min(0)
    # The square root in float64, rounded once to float32: correctly rounded on every device, so CPU, CUDA
    # and the numba kernel agree to the bit (torch's float32 sqrt on the CPU can be one ulp off).
    reach = torch.sqrt((radius**2 - offset**2).clamp_min(0).double()).float()
    touches = solid & (offset < radius - TOLERANCE) & (gap >= -TOLERANCE)
    contact = torch.where(touches, (gap - reach).clamp_min(0), math.inf)
    return torch.minimum(contact.flatten(1).min(1).values, wanted)
