"""Top-down maps of scanned scenes (SimConfig.scenes_dir) from their navmesh: the navigable floor of one
storey, and the shortest path down a geodesic distance field over its places.

Floor points are BatchSim's (x, y) = habitat's (x, -z); the navmesh grid's rows run along +z, so its row 0
is the top of the picture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from navzoo.evaluation.topdown import NAVIGABLE, WALL, MapCanvas

if TYPE_CHECKING:  # the mesh stack (scipy, trimesh) is loaded by the simulator that has meshes
    from navzoo.sim.scans.navmesh import NavMesh

# Places this far above or below the agent's floor belong to another storey, which the map leaves out: a
# storey is at least the agent's height (1.5 m) above the one below.
STOREY_BAND = 1.0
MAX_MAP_PIXELS = 1600  # the longer side of a map, at most: a 50 m house stays a picture, not a poster


def navmesh_canvas(navmesh: NavMesh, floor: float, px_per_m: float) -> MapCanvas:
    """The places of the storey at height `floor` (habitat's y) as navigable floor on a wall-coloured
    ground, about `px_per_m` pixels per metre (whole pixels per navmesh cell, and the map's longer side at
    most MAX_MAP_PIXELS)."""
    rows, cols = navmesh.shape
    cell_pixels = max(1, min(round(px_per_m * navmesh.cell), MAX_MAP_PIXELS // max(rows, cols)))
    storey = np.abs(navmesh.y - floor) <= STOREY_BAND
    floor_cells = np.zeros(rows * cols, dtype=bool)
    floor_cells[navmesh.column[storey]] = True
    cells = np.empty((rows, cols, 3), dtype=np.uint8)
    cells[:] = WALL
    cells[floor_cells.reshape(rows, cols)] = NAVIGABLE
    image = np.repeat(np.repeat(cells, cell_pixels, 0), cell_pixels, 1)
    # The picture's bottom-left corner is the grid's last row (largest z, smallest floor y), first column.
    origin = (float(navmesh.origin[0]), -float(navmesh.origin[2] + rows * navmesh.cell))
    return MapCanvas(image, cell_pixels / navmesh.cell, origin)


def navmesh_path(navmesh: NavMesh, field: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Floor points [K, 2] from `start` (a habitat position [3]) down the distance field `field` [places]
    to its source, each step to the lowest of the place's 8 neighbours not yet on the path (one as low as the
    place will do: neighbours can tie where the way turns at a corner they share); just the start off the
    navmesh."""
    points = [np.array([start[0], -start[2]], dtype=np.float64)]
    place, _ = navmesh.project(np.asarray(start, np.float64).reshape(1, 3))
    at = int(place[0])
    if at < 0:
        return np.asarray(points)
    positions = navmesh.positions
    visited = {at}
    while np.isfinite(field[at]):
        neighbours = navmesh.around(np.asarray([at]))[0, 1:]
        neighbours = np.array([q for q in neighbours if q >= 0 and q not in visited], np.int64)
        if len(neighbours) == 0:
            break
        best = int(neighbours[np.argmin(field[neighbours])])
        if field[best] > field[at]:
            break
        at = best
        visited.add(at)
        points.append(np.array([positions[at, 0], -positions[at, 2]]))
    return np.asarray(points)
