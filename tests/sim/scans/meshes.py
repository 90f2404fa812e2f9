"""Small scenes for the scanned-scene tests, built as triangle soups in habitat's frame (y up, metres)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import trimesh


class Builder:
    """Collects quads and boxes, each wound so that its front faces the given normal."""

    def __init__(self) -> None:
        self.triangles: list[np.ndarray] = []

    def quad(self, corner, a, b, normal) -> Builder:
        """The parallelogram corner, corner + a, corner + a + b, corner + b, facing `normal`."""
        corner, a, b = (np.asarray(v, np.float64) for v in (corner, a, b))
        points = np.stack([corner, corner + a, corner + a + b, corner + b])
        if np.dot(np.cross(a, b), normal) < 0:
            points = points[::-1]
        self.triangles += [points[[0, 1, 2]], points[[0, 2, 3]]]
        return self

    def floor(self, x0, x1, z0, z1, y) -> Builder:
        return self.quad((x0, y, z0), (x1 - x0, 0, 0), (0, 0, z1 - z0), (0, 1, 0))

    def box(self, low, high, inward: bool = False) -> Builder:
        """An axis-aligned box; its faces point out (a solid), or in (a room)."""
        (x0, y0, z0), (x1, y1, z1) = low, high
        s = -1 if inward else 1
        self.quad((x0, y1, z0), (x1 - x0, 0, 0), (0, 0, z1 - z0), (0, s, 0))  # top
        self.quad((x0, y0, z0), (x1 - x0, 0, 0), (0, 0, z1 - z0), (0, -s, 0))  # bottom
        self.quad((x0, y0, z0), (0, y1 - y0, 0), (0, 0, z1 - z0), (-s, 0, 0))
        self.quad((x1, y0, z0), (0, y1 - y0, 0), (0, 0, z1 - z0), (s, 0, 0))
        self.quad((x0, y0, z0), (x1 - x0, 0, 0), (0, y1 - y0, 0), (0, 0, -s))
        self.quad((x0, y0, z1), (x1 - x0, 0, 0), (0, y1 - y0, 0), (0, 0, s))
        return self

    def mesh(self) -> trimesh.Trimesh:
        vertices = np.concatenate(self.triangles).astype(np.float64)
        faces = np.arange(len(vertices)).reshape(-1, 3)
        return trimesh.Trimesh(vertices, faces, process=False)


def box_room(width: float = 4.0, depth: float = 3.0, height: float = 2.5) -> Builder:
    """A closed room from (0, 0, 0) to (width, height, depth), its surfaces facing inside."""
    return Builder().box((0, 0, 0), (width, height, depth), inward=True)


def stairs(rise: float, top: float = 2.0, ceiling: bool = False) -> Builder:
    """Two storeys: a ground floor (x 0..10, z 0..4) and an upper floor slab over x 6..10 at `top`, joined
    by a 1.5 m wide flight of 0.3 m deep steps of `rise` (the last one level with the slab)."""
    scene = Builder().floor(0, 10, 0, 4, 0.0)
    steps = round(top / rise)
    for i in range(1, steps + 1):
        scene.box((6 - 0.3 * (steps - i + 1), 0, 0), (6, rise * i, 1.5))
    scene.box((6, top - 0.1, 0), (10, top, 4))
    if ceiling:
        scene.quad((0, 4.5, 0), (10, 0, 0), (0, 0, 4), (0, -1, 0))
    return scene


def ramp(angle_deg: float, rise: float = 1.0) -> Builder:
    """A floor (x 0..12, z 0..3) with a 1.5 m wide ramp at `angle_deg` up to a 2 m x 3 m platform `rise`
    high at x 10..12."""
    run = rise / np.tan(np.radians(angle_deg))
    scene = Builder().floor(0, 12, 0, 3, 0.0)
    scene.quad((10 - run, 0, 0), (run, rise, 0), (0, 0, 1.5), (0, 1, 0))
    return scene.box((10, 0, 0), (12, rise, 3))


def table_room(ceiling: float) -> Builder:
    """A 6 m x 6 m room with a 2 m x 1.2 m table top from 0.93 to 0.97 m on four legs."""
    scene = box_room(6, 6, ceiling)
    scene.box((2, 0.93, 2), (4, 0.97, 3.2))
    for x, z in ((2, 2), (3.95, 2), (2, 3.15), (3.95, 3.15)):
        scene.box((x, 0, z), (x + 0.05, 0.93, z + 0.05))
    return scene


def holed_floor() -> Builder:
    """A 6 m x 6 m open floor with a 2 m x 2 m hole in its middle and walls around it, no ceiling."""
    scene = Builder()
    scene.floor(0, 6, 0, 2, 0.0).floor(0, 6, 4, 6, 0.0).floor(0, 2, 2, 4, 0.0).floor(4, 6, 2, 4, 0.0)
    for corner, along, normal in (
        ((0, 0, 0), (6, 0, 0), (0, 0, 1)),
        ((0, 0, 6), (6, 0, 0), (0, 0, -1)),
        ((0, 0, 0), (0, 0, 6), (1, 0, 0)),
        ((6, 0, 0), (0, 0, 6), (-1, 0, 0)),
    ):
        scene.quad(corner, along, (0, 2.5, 0), normal)
    return scene


def leaning_room() -> Builder:
    """A 6 m x 4 m room whose x = 0 wall leans in: from the floor at x 0 to x 1 at the 2.5 m ceiling."""
    scene = Builder().floor(0, 6, 0, 4, 0.0)
    scene.quad((0, 0, 0), (1, 2.5, 0), (0, 0, 4), (1, -0.4, 0))
    scene.quad((1, 2.5, 0), (5, 0, 0), (0, 0, 4), (0, -1, 0))
    scene.quad((6, 0, 0), (0, 2.5, 0), (0, 0, 4), (-1, 0, 0))
    for z, facing in ((0, 1), (4, -1)):
        scene.quad((0, 0, z), (6, 0, 0), (0, 2.5, 0), (0, 0, facing))
    return scene


def fine_room(size: float, spacing: float, seed: int = 0) -> trimesh.Trimesh:
    """A `size` m square room whose floor is a grid of `spacing` m triangles with 1 cm of noise (a scan's
    tessellation), with walls, a coarser ceiling at 2.6 m and a few boxes standing on the floor."""
    rng = np.random.default_rng(seed)
    n = round(size / spacing)
    grid = np.linspace(0, size, n + 1)
    gx, gz = np.meshgrid(grid, grid)
    vertices = np.stack([gx.ravel(), rng.uniform(0, 0.01, gx.size), gz.ravel()], 1)
    index = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = index[:-1, :-1], index[:-1, 1:], index[1:, 1:], index[1:, :-1]
    # Counter-clockwise seen from above (+y): a -> d -> c, a -> c -> b.
    faces = np.concatenate([np.stack([a, d, c], -1).reshape(-1, 3), np.stack([a, c, b], -1).reshape(-1, 3)])
    floor = trimesh.Trimesh(vertices, faces, process=False)
    rest = box_room(size, size, 2.6)
    for k in range(10):
        x, z = rng.uniform(1, size - 3, 2)
        rest.box((x, 0, z), (x + 1.5, 0.8 + 0.1 * k, z + 1.0))
    return trimesh.util.concatenate([floor, rest.mesh()])


# Two boxes of two_storeys(), each seen from the other storey: (x0, z0, x1, z1) and their height range.
GROUND_BOX = ((3.0, 2.5, 3.5, 3.0), (0.0, 1.0))
UPPER_BOX = ((7.5, 3.2, 8.0, 3.7), (2.0, 3.0))


def two_storeys() -> Builder:
    """stairs() (a ground floor and an upper floor slab over x 6..10 at 2 m, ceiling at 4.5 m) with a 1 m
    box on the ground floor beyond the slab (GROUND_BOX) and a 1 m box on the slab (UPPER_BOX). From the
    ground floor at x < 2 the upper box shows above the slab's edge; from the slab near its edge the ground
    box shows below it."""
    scene = stairs(0.15, ceiling=True)
    for (x0, z0, x1, z1), (y0, y1) in (GROUND_BOX, UPPER_BOX):
        scene.box((x0, y0, z0), (x1, y1, z1))
    return scene


def write_episodes(path: Path, scene_id: str, episodes: list[tuple[tuple, float, tuple]]) -> Path:
    """A habitat PointNav dataset (.json.gz) of (start [x, y, z], yaw in radians, goal [x, y, z]) episodes
    in the scene `scene_id` (a mesh path relative to the scenes folder)."""
    data = {
        "episodes": [
            {
                "episode_id": str(index),
                "scene_id": scene_id,
                "start_position": list(start),
                "start_rotation": [0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)],
                "goals": [{"position": list(goal), "radius": None}],
            }
            for index, (start, yaw, goal) in enumerate(episodes)
        ]
    }
    with gzip.open(path, "wt") as f:
        json.dump(data, f)
    return path
