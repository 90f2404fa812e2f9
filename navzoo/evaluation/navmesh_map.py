"""Top-down maps of scanned scenes (SimConfig.scenes_dir) from their navmesh: the navigable floor of one
storey. The shortest path drawn on it is the navmesh's taut one (navzoo.sim.scans.taut_paths).

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
