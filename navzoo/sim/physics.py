"""Agent motion: a disc that cannot overlap obstacle cells and slides along them like habitat's navmesh.

A blocked move first advances as far as it can along its direction, then the rest of the move continues
along whichever axis is still free: walls are axis-aligned, so this keeps the component parallel to the wall,
which is what habitat-sim's try_step does on a navmesh edge.
"""

import math

import torch

BISECTION_STEPS = 7  # resolves contact to forward_step / 2**7 (2 mm for 0.25 m)


def disc_free(heights: torch.Tensor, cell_size: float, slots, points, radius: float) -> torch.Tensor:
    """True where a disc of `radius` at `points` [M, 2] in scene `slots` [M] touches no solid cell."""
    _, rows, cols = heights.shape
    reach = int(math.ceil(radius / cell_size))
    x, y = points[:, 0], points[:, 1]
    col0 = torch.floor(x / cell_size).long()
    row0 = torch.floor(y / cell_size).long()
    offsets = torch.arange(-reach, reach + 1, device=points.device)
    r = row0[:, None, None] + offsets[None, :, None]  # [M, D, 1]
    c = col0[:, None, None] + offsets[None, None, :]  # [M, 1, D]
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    flat = (slots[:, None, None] * rows + r.clamp(0, rows - 1)) * cols + c.clamp(0, cols - 1)
    solid = ~inside | (heights.reshape(-1)[flat] > 0)
    gap_x = torch.maximum(c * cell_size - x[:, None, None], x[:, None, None] - (c + 1) * cell_size).clamp_min(0)
    gap_y = torch.maximum(r * cell_size - y[:, None, None], y[:, None, None] - (r + 1) * cell_size).clamp_min(0)
    touching = solid & (gap_x**2 + gap_y**2 < radius**2)
    return ~touching.flatten(1).any(1)


def move(heights, cell_size: float, slots, pos, delta, radius: float):
    """Move discs by `delta` [N, 2] with sliding; returns (new positions, collided flags)."""
    target = pos + delta
    free = disc_free(heights, cell_size, slots, target, radius)
    if bool(free.all()):
        return target, ~free
    blocked = torch.nonzero(~free).squeeze(1)
    s, p, d = slots[blocked], pos[blocked], delta[blocked]
    contact = p + d * _free_fraction(heights, cell_size, s, p, d, radius)[:, None]
    rest = p + d - contact
    along_x = torch.stack([rest[:, 0], torch.zeros_like(rest[:, 0])], 1)
    along_y = torch.stack([torch.zeros_like(rest[:, 1]), rest[:, 1]], 1)
    slide_x = along_x * _free_fraction(heights, cell_size, s, contact, along_x, radius)[:, None]
    slide_y = along_y * _free_fraction(heights, cell_size, s, contact, along_y, radius)[:, None]
    use_x = slide_x.norm(dim=1) >= slide_y.norm(dim=1)
    slid = contact + torch.where(use_x[:, None], slide_x, slide_y)
    new = target.clone()
    new[blocked] = slid
    return new, ~free


def _free_fraction(heights, cell_size, slots, pos, delta, radius):
    """Largest fraction in [0, 1] of `delta` the disc can travel from `pos` (bisection on contact)."""
    lo = torch.zeros(pos.shape[0], device=pos.device)
    hi = torch.ones_like(lo)
    whole = disc_free(heights, cell_size, slots, pos + delta, radius)
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        ok = disc_free(heights, cell_size, slots, pos + delta * mid[:, None], radius)
        lo = torch.where(ok, mid, lo)
        hi = torch.where(ok, hi, mid)
    return torch.where(whole, torch.ones_like(lo), lo)
