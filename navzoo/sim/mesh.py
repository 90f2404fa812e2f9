"""A scene as a triangle mesh in habitat's frame, with the surfaces the renderer draws.

The renderer's world is a grid of boxes: every cell is a box from the floor up to its height, walls reach
the ceiling, and a ceiling plane covers everything (navzoo.sim.render). The mesh has exactly those
surfaces: the top of every cell below the ceiling (the floor, or a piece of furniture), a vertical face
wherever two neighbouring cells differ in height (up to the ceiling), and the ceiling. Cells outside the
grid are solid, as in the renderer. Coplanar neighbours of one material are merged into one rectangle
along rows or columns, which keeps a scene's file small.

Colours follow the renderer's shading: a top shows its cell's material, a face of furniture the
furniture's, and a wall face the paint of the room it faces. Patterns (stripes, checks) are not exported;
each material keeps its base colour.

Frame: habitat's, y up and metres. A point (x, y) on navzoo's floor at height h is (x, h, -y).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from navzoo.sim.materials import CEILING_ID
from navzoo.sim.scenes import Scene


@dataclass
class SurfaceMesh:
    """Triangles grouped by material: positions [V, 3] and normals [V, 3] float32, triangles [T, 3]
    uint32 indexing them, for each material id of navzoo.sim.materials.MATERIALS."""

    positions: dict[int, np.ndarray]
    normals: dict[int, np.ndarray]
    triangles: dict[int, np.ndarray]

    @property
    def num_triangles(self) -> int:
        return sum(len(t) for t in self.triangles.values())


def scene_mesh(scene: Scene) -> SurfaceMesh:
    """The surfaces of `scene` as triangles, grouped by material."""
    quads: dict[int, list] = defaultdict(list)  # material -> [(corner, edge_a, edge_b, normal)]
    _tops(scene, quads)
    _faces(scene, quads, axis=1)
    _faces(scene, quads, axis=0)
    width, depth = scene.size_m
    quads[CEILING_ID].append(((0, 0, scene.ceiling_height), (width, 0, 0), (0, depth, 0), (0, 0, -1)))
    return _triangulate(quads)


def _tops(scene: Scene, quads) -> None:
    """The top of every cell below the ceiling, merged along rows: (height, material) runs."""
    cell, ceiling = scene.cell_size, scene.ceiling_height
    for row in range(scene.shape[0]):
        keys = [
            (float(h), int(m)) if h < ceiling else None
            for h, m in zip(scene.heights[row], scene.materials[row], strict=True)
        ]
        for start, stop, (height, material) in _runs(keys):
            corner = (start * cell, row * cell, height)
            quads[material].append((corner, ((stop - start) * cell, 0, 0), (0, cell, 0), (0, 0, 1)))


def _faces(scene: Scene, quads, axis: int) -> None:
    """Vertical faces between cells that are neighbours along `axis` (1: x, across columns; 0: y, across
    rows), merged along the shared grid line, including the faces of the grid's border."""
    cell, ceiling = scene.cell_size, scene.ceiling_height
    heights = np.moveaxis(scene.heights, axis, 0)  # [lines + ..., along]
    materials = np.moveaxis(scene.materials, axis, 0)
    rooms = np.moveaxis(scene.rooms, axis, 0)
    solid = np.full((1, heights.shape[1]), ceiling, dtype=heights.dtype)
    padded = np.concatenate([solid, heights, solid])  # outside the grid is solid
    count = heights.shape[0]
    for line in range(count + 1):  # the grid line between cells line - 1 and line
        keys = []
        for k in range(heights.shape[1]):
            below, above = padded[line, k], padded[line + 1, k]  # heights either side
            lower = line - 1 if below < above else line  # index of the lower cell (it faces it)
            taller = line if below < above else line - 1
            low, high = min(below, above), min(max(below, above), ceiling)
            if low >= high:
                keys.append(None)
                continue
            inside = 0 <= taller < count
            material = int(materials[taller, k]) if inside else -1
            if material < 0:  # a wall (or the outside): the paint of the room in front of it
                material = int(scene.wall_materials[max(int(rooms[lower, k]), 0)])
            keys.append((float(low), float(high), material, 1 if lower >= line else -1))
        for start, stop, (low, high, material, facing) in _runs(keys):
            # `facing` +1: the face looks toward increasing cell index along `axis`.
            at, span = line * cell, (stop - start) * cell
            if axis == 1:  # a face on the line x = at, spanning y
                corner, along, normal = (at, start * cell, low), (0, span, 0), (facing, 0, 0)
            else:  # y = at, spanning x
                corner, along, normal = (start * cell, at, low), (span, 0, 0), (0, facing, 0)
            quads[material].append((corner, along, (0, 0, high - low), normal))


def _runs(keys: list):
    """(start, stop, key) for each maximal run of equal keys that are not None."""
    start = 0
    for k in range(1, len(keys) + 1):
        if k == len(keys) or keys[k] != keys[start]:
            if keys[start] is not None:
                yield start, k, keys[start]
            start = k


def _triangulate(quads) -> SurfaceMesh:
    positions, normals, triangles = {}, {}, {}
    for material, items in sorted(quads.items()):
        corner, a, b, normal = (np.asarray(x, dtype=np.float64) for x in zip(*items, strict=True))
        corners = np.stack([corner, corner + a, corner + a + b, corner + b], 1)  # [Q, 4, 3] navzoo frame
        # Counter-clockwise seen from the side the normal points to (glTF's front face).
        flip = np.einsum("qi,qi->q", np.cross(a, b), normal) < 0
        corners[flip] = corners[flip][:, ::-1]
        quad_triangles = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.uint32)
        offsets = (np.arange(len(items), dtype=np.uint32) * 4)[:, None, None]
        positions[material] = _habitat(corners.reshape(-1, 3))
        normals[material] = _habitat(np.repeat(normal, 4, axis=0))
        triangles[material] = (quad_triangles[None] + offsets).reshape(-1, 3)
    return SurfaceMesh(positions, normals, triangles)


def _habitat(points: np.ndarray) -> np.ndarray:
    """navzoo (x, y, h) -> habitat (x, h, -y), float32."""
    return np.stack([points[:, 0], points[:, 2], -points[:, 1]], 1).astype(np.float32)
