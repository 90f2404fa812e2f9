"""habitat's navigation mesh rules on a scanned stage, as a layered grid of standing places with geodesic
distance fields (docs/design/habitat-sim-rules.md §4).

Build: the triangles are voxelised into solid spans per 0.05 m column (navzoo.sim.scans.heightfield); a
standing place is the top of a walkable span with room for the agent above it and no ledge beside it
(navzoo.sim.scans.floors). Each keeps its own layer, so storeys never merge. Places are linked to their
4 neighbours where the step is at most a climb; the agent's radius is eroded off every boundary (a
2-3 chamfer distance under 2 radii, counted in links, as Recast does), and connected regions under habitat's
minimum region area are dropped.

Geodesic distances: distance fields from Dijkstra over the places' centres and corners
(navzoo.sim.scans.geodesics), so that paths turn at the corners of the eroded region, as habitat's do; and
habitat's shortest path and geodesic distance, that path pulled taut (navzoo.sim.scans.taut_paths).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import KDTree

from navzoo.config_base import Config
from navzoo.errors import ConfigError, SceneError
from navzoo.sim.scans.floors import connect, standing_spans
from navzoo.sim.scans.geodesics import GeodesicGraph
from navzoo.sim.scans.heightfield import build_heightfield, walkable_triangles
from navzoo.sim.scans.orientation import faces_inside_out
from navzoo.sim.scans.stage import Stage
from navzoo.sim.scans.taut_paths import GoalSearch
from navzoo.typed_config import check_field_types

SNAP_HALF_EXTENTS = (2.0, 4.0, 2.0)  # habitat's nearest-polygon search box (x, y, z), metres
MAX_Y_DELTA = 0.5  # habitat's is_navigable: the surface within this of the point


@dataclass(frozen=True)
class NavmeshConfig(Config):
    """habitat-sim's navmesh settings (its NavMeshSettings defaults, which habitat-lab's agent matches)."""

    agent_radius: float = 0.1
    agent_height: float = 1.5
    max_climb: float = 0.2
    max_slope: float = 45.0  # degrees
    cell: float = 0.05  # metres, horizontal
    cell_height: float = 0.2  # metres, the vertical quantum of heights, clearances and climbs
    region_min_size: int = 20  # regions under region_min_size² cells are dropped
    # Repair an inside-out mesh (floors facing down) by flipping its winding; habitat-sim would find no
    # floor there (or walk on the roof). False keeps habitat's reading as is.
    repair_winding: bool = True

    def __post_init__(self) -> None:
        check_field_types(self)
        for name in ("agent_radius", "agent_height", "cell", "cell_height"):
            if not getattr(self, name) > 0:
                raise ConfigError(name, getattr(self, name), "a length in metres above 0")
        if not 0 <= self.max_slope < 90:
            raise ConfigError("max_slope", self.max_slope, "degrees in 0 .. 90")
        if self.max_climb < 0 or self.region_min_size < 0:
            raise ConfigError(
                "max_climb/region_min_size", (self.max_climb, self.region_min_size), "0 or more"
            )

    @property
    def height_cells(self) -> int:
        return math.ceil(self.agent_height / self.cell_height - 1e-9)

    @property
    def climb_cells(self) -> int:
        return math.floor(self.max_climb / self.cell_height + 1e-9)

    @property
    def radius_cells(self) -> int:
        return math.ceil(self.agent_radius / self.cell - 1e-9)


@dataclass(frozen=True, eq=False)
class NavMesh:
    """The standing places of a stage and their links; queries in habitat's world frame (x, y up, z).

    Places are sorted by grid column (row * cols + col, row along z, col along x from `origin`), then by
    height. `y` is the height of the surface; `neighbours` [N, 4] the linked place in each of
    floors.DIRECTIONS (-1: none); `island` the connected component of each place.
    """

    origin: np.ndarray  # float64 [3], the grid's corner
    cell: float
    shape: tuple[int, int]  # (rows, cols)
    column: np.ndarray  # int64 [N]
    y: np.ndarray  # float32 [N]
    neighbours: np.ndarray  # int32 [N, 4]
    island: np.ndarray  # int32 [N]
    max_climb: float
    geodesics: GeodesicGraph = field(init=False, repr=False)
    _tree: KDTree = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "geodesics", GeodesicGraph.of(self.positions, self.cell, self.neighbours))
        object.__setattr__(self, "_tree", KDTree(self.positions))

    # -- arrays ---------------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.column)

    @property
    def positions(self) -> np.ndarray:
        """float64 [N, 3]: the centre of each place on its surface."""
        row, col = np.divmod(self.column, self.shape[1])
        x = self.origin[0] + (col + 0.5) * self.cell
        z = self.origin[2] + (row + 0.5) * self.cell
        return np.stack([x, self.y.astype(np.float64), z], 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything needed to rebuild this navmesh (NavMesh.from_arrays), for caches."""
        return {
            "origin": self.origin,
            "cell": np.asarray(self.cell, np.float64),
            "shape": np.asarray(self.shape, np.int64),
            "column": self.column,
            "y": self.y,
            "neighbours": self.neighbours,
            "island": self.island,
            "max_climb": np.asarray(self.max_climb, np.float64),
        }

    @classmethod
    def from_arrays(cls, arrays) -> NavMesh:
        rows, cols = (int(v) for v in arrays["shape"])
        return cls(
            np.asarray(arrays["origin"], np.float64),
            float(arrays["cell"]),
            (rows, cols),
            np.asarray(arrays["column"], np.int64),
            np.asarray(arrays["y"], np.float32),
            np.asarray(arrays["neighbours"], np.int32),
            np.asarray(arrays["island"], np.int32),
            float(arrays["max_climb"]),
        )

    # -- queries --------------------------------------------------------------------------------------
    def columns_of(self, points: np.ndarray) -> np.ndarray:
        """int64 [M]: the grid column of each point [M, 3]; -1 outside the grid."""
        points = np.asarray(points, np.float64).reshape(-1, 3)
        col = np.floor((points[:, 0] - self.origin[0]) / self.cell).astype(np.int64)
        row = np.floor((points[:, 2] - self.origin[2]) / self.cell).astype(np.int64)
        inside = (col >= 0) & (col < self.shape[1]) & (row >= 0) & (row < self.shape[0])
        return np.where(inside, row * self.shape[1] + col, -1)

    def place_below(self, points: np.ndarray) -> np.ndarray:
        """int64 [M]: the agent's floor, the highest place in each point's column at most a climb above the
        point (so storeys stay apart); -1 where there is none."""
        below, _ = self._column_neighbours(points)
        return below

    def floor_height(self, points: np.ndarray) -> np.ndarray:
        """float32 [M]: the height of the floor under each point (place_below); NaN where there is none."""
        place = self.place_below(points)
        return np.where(place >= 0, self.y[np.maximum(place, 0)], np.nan).astype(np.float32)

    def is_navigable(self, points: np.ndarray, max_y_delta: float = MAX_Y_DELTA) -> np.ndarray:
        """bool [M]: a standing place in the point's column lies within `max_y_delta` of it vertically
        (habitat's is_navigable)."""
        points = np.asarray(points, np.float64).reshape(-1, 3)
        below, above = self._column_neighbours(points, tolerance=0.0)
        delta = np.full(len(points), np.inf)
        for place in (below, above):
            found = place >= 0
            delta[found] = np.minimum(delta[found], np.abs(self.y[place[found]] - points[found, 1]))
        return delta <= max_y_delta

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(place int64 [M], point float64 [M, 3]): habitat's nearest-polygon projection. Over a place, the
        distance is the height difference less a climb, and the point keeps its x, z; otherwise the
        nearest place centre in 3D. Only places within SNAP_HALF_EXTENTS count: -1 and NaN otherwise."""
        points = np.asarray(points, np.float64).reshape(-1, 3)
        place = np.full(len(points), -1, np.int64)
        best = np.full(len(points), np.inf)
        snapped = np.full((len(points), 3), np.nan)
        below, above = self._column_neighbours(points, tolerance=0.0)
        half = np.asarray(SNAP_HALF_EXTENTS)
        for candidate in (below, above):
            found = np.flatnonzero(candidate >= 0)
            dy = np.abs(self.y[candidate[found]] - points[found, 1])
            distance = np.maximum(dy - self.max_climb, 0.0) ** 2
            better = (dy <= half[1]) & (distance < best[found])
            chosen = found[better]
            place[chosen], best[chosen] = candidate[chosen], distance[better]
            snapped[chosen] = points[chosen]
            snapped[chosen, 1] = self.y[candidate[chosen]]
        if self.size:
            # The box's corner is the farthest a place may be.
            distance, nearest = self._tree.query(points, distance_upper_bound=float(np.linalg.norm(half)))
            found = np.flatnonzero(np.isfinite(distance))
            centres = self.positions[nearest[found]]
            in_box = np.all(np.abs(centres - points[found]) <= half, axis=1)
            better = in_box & (distance[found] ** 2 < best[found])
            chosen = found[better]
            place[chosen], snapped[chosen] = nearest[chosen], centres[better]
        return place, snapped

    def snap(self, points: np.ndarray) -> np.ndarray:
        """float64 [M, 3]: habitat's snap_point, the nearest navigable point; NaN where none is near."""
        return self.project(points)[1]

    def island_of(self, points: np.ndarray) -> np.ndarray:
        """int32 [M]: the island (connected component) of each point's projection; -1 where none."""
        place, _ = self.project(points)
        return np.where(place >= 0, self.island[np.maximum(place, 0)], -1).astype(np.int32)

    def island_radius(self, points: np.ndarray) -> np.ndarray:
        """float32 [M]: habitat's island radius of each point's island (the largest distance of its places
        from their centroid); 0 where a point projects nowhere."""
        islands = self.island_of(points)
        radii = np.zeros(len(islands), np.float32)
        positions = self.positions
        for label in np.unique(islands[islands >= 0]):
            members = positions[self.island == label]
            radii[islands == label] = np.linalg.norm(members - members.mean(0), axis=1).max()
        return radii

    # -- geodesic distances ---------------------------------------------------------------------------
    def distance_field(self, goals: np.ndarray) -> np.ndarray:
        """float32 [N]: the geodesic distance in metres from each place to the nearest of `goals` [G, 3]
        (habitat's multi-goal shortest path) along the graph's paths; inf on other islands, and everywhere
        if no goal projects."""
        place, point = self.project(goals)
        found = place >= 0
        if not found.any():
            return np.full(self.size, np.inf, np.float32)
        return self.geodesics.fields(place[found], point[found], np.zeros(int(found.sum()), np.int64), 1)[0]

    def place_fields(self, places: np.ndarray) -> np.ndarray:
        """float32 [K, N]: the geodesic distance of every place to each of `places` [K] (its centre)."""
        places = np.asarray(places, np.int64)
        return self.geodesics.fields(places, self.positions[places], np.arange(len(places)), len(places))

    def search(self, goals: np.ndarray) -> GoalSearch:
        """One search from `goals` [G, 3]: its distance field, and taut shortest paths to them."""
        place, point = self.project(goals)
        found = place >= 0
        return self._searches(place[found], point[found], np.zeros(int(found.sum()), np.int64), 1)[0]

    def place_searches(self, places: np.ndarray) -> list[GoalSearch]:
        """One search from each of `places` [K] (its centre), in one Dijkstra call."""
        places = np.asarray(places, np.int64)
        return self._searches(places, self.positions[places], np.arange(len(places)), len(places))

    def _searches(
        self, places: np.ndarray, points: np.ndarray, rows: np.ndarray, count: int
    ) -> list[GoalSearch]:
        nodes = len(self.geodesics.position)
        fields, predecessors = self.geodesics.search(places, points, rows, count)
        return [
            GoalSearch(self, fields[r], predecessors[r], nodes + r, places[rows == r], points[rows == r])
            for r in range(count)
        ]

    def shortest_path(self, start: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """habitat's ShortestPath points [K, 3] from `start` [3] to the nearest of `goals` [G, 3]: the graph's
        path pulled taut (navzoo.sim.scans.taut_paths); empty if there is none."""
        return self.search(goals).path(start)

    def geodesic_distance(self, start: np.ndarray, goals: np.ndarray) -> float:
        """habitat's geodesic distance from `start` [3] to the nearest of `goals` [G, 3], the length of
        shortest_path; inf if unreachable."""
        return self.search(goals).distance(start)

    def layer_of(self, place: np.ndarray) -> np.ndarray:
        """int64 [M]: each place's rank among the places of its column, lowest first (0 where `place` is
        -1): which of the floors stacked there it is."""
        place = np.asarray(place, np.int64)
        on = place >= 0
        layer = np.zeros(len(place), np.int64)
        # places are sorted by column, then height
        layer[on] = place[on] - np.searchsorted(self.column, self.column[place[on]], side="left")
        return layer

    def around(self, place: np.ndarray) -> np.ndarray:
        """int64 [M, 9]: each place, its 4 linked neighbours and the 4 diagonal places reached through them
        (-1: none, or where `place` is -1)."""
        here = place.astype(np.int64)
        columns = [here]
        for d in range(4):
            side = np.where(here >= 0, self.neighbours[np.maximum(here, 0), d], -1).astype(np.int64)
            corner = np.where(side >= 0, self.neighbours[np.maximum(side, 0), (d + 1) % 4], -1).astype(
                np.int64
            )
            columns += [side, corner]
        return np.stack(columns, 1)

    def ways_in(self, place: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """How the simulator reads a point's distance off a field: for points [M, 3] on places [M], the places
        around each one's (`around`, [M, 9], -1: none) and the straight hop in x, z [M, 9] from the point to
        each one's centre. The point's distance is the least of field + hop over them."""
        around = self.around(place)
        centres = self.geodesics.centre[np.maximum(around, 0)]
        hop = np.hypot(centres[..., 0] - points[:, None, 0], centres[..., 2] - points[:, None, 2])
        return around, hop

    # -- internals ------------------------------------------------------------------------------------
    def _column_neighbours(self, points: np.ndarray, tolerance: float | None = None):
        """The places of each point's column just below (at most `tolerance` above the point; default a
        climb) and the next one above; -1 where there is none."""
        points = np.asarray(points, np.float64).reshape(-1, 3)
        tolerance = self.max_climb if tolerance is None else tolerance
        column = self.columns_of(points)
        # Places sorted by (column, y): one key orders both, heights are far below the column spacing.
        span = 1e5
        keys = self.column * span + (self.y.astype(np.float64) + span / 2)
        wanted = column * span + np.clip(points[:, 1] + tolerance + span / 2, 0, span - 1)
        below = np.searchsorted(keys, wanted, side="right") - 1
        above = below + 1
        valid = column >= 0
        ok_below = valid & (below >= 0) & (self.column[np.clip(below, 0, max(self.size - 1, 0))] == column)
        ok_above = (
            valid & (above < self.size) & (self.column[np.clip(above, 0, max(self.size - 1, 0))] == column)
        )
        if self.size == 0:
            ok_below[:] = ok_above[:] = False
        return np.where(ok_below, below, -1), np.where(ok_above, above, -1)


def largest_finite(field: np.ndarray) -> float:
    """The largest finite distance of a distance field: its source's farthest reachable place (0 if none)."""
    finite = field[np.isfinite(field)]
    return float(finite.max()) if len(finite) else 0.0


def build_navmesh(stage: Stage, config: NavmeshConfig | None = None) -> NavMesh:
    """The navmesh of `stage` under habitat's rules with `config`'s settings. SceneError if no floor is
    left."""
    config = config or NavmeshConfig()
    faces = stage.faces
    if config.repair_winding and faces_inside_out(
        stage.vertices, faces, config.agent_height, config.max_slope
    ):
        warnings.warn(
            f"{stage.path}: its floors face down (an inside-out mesh); navzoo flips every triangle's winding "
            "for the navmesh. Re-export it with outward-facing normals to silence this.",
            stacklevel=2,
        )
        faces = faces[:, ::-1]
    navmesh = _build(stage.vertices, faces, config)
    if navmesh.size == 0 and config.repair_winding:
        flipped = _build(stage.vertices, faces[:, ::-1], config)
        if flipped.size:
            warnings.warn(
                f"{stage.path}: no floor faces up, but the reversed winding has floors; navzoo flips every "
                "triangle for the navmesh. Re-export it with consistent winding to silence this.",
                stacklevel=2,
            )
            navmesh = flipped
    if navmesh.size == 0:
        raise SceneError(
            f"{stage.path} has no navigable floor for the agent (up: {stage.frame.up}, from "
            f"{stage.frame.source}): if the scene stands on its side, give its up axis in "
            f"{stage.path.stem}.stage_config.json; else check that floors face up and are larger than "
            f"{config.region_min_size * config.cell:g} m square"
        )
    return navmesh


def _build(vertices: np.ndarray, faces: np.ndarray, config: NavmeshConfig) -> NavMesh:
    # Zero-area triangles are no surface; voxelised, a collapsed one would stand in the room as a speck.
    corners = vertices.astype(np.float64)[faces]
    area = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    faces = faces[area > 1e-12]
    walkable = walkable_triangles(vertices, faces, config.max_slope)
    hf = build_heightfield(vertices, faces, walkable, config.cell, config.cell_height, config.climb_cells)
    standing = standing_spans(hf, config.height_cells, config.climb_cells)
    index = np.flatnonzero(standing)
    column, floor, y = hf.column[index], hf.top[index], hf.top_y[index]
    # A floor's ceiling is the bottom of the next span up in its column.
    next_span = np.minimum(index + 1, len(hf.column) - 1)
    has_above = (index + 1 < len(hf.column)) & (hf.column[next_span] == column)
    ceiling = np.where(has_above, hf.bottom[next_span], 1 << 30)
    neighbours = connect(column, floor, ceiling, hf.shape, config.height_cells, config.climb_cells)
    for step in range(2):  # erode the agent's radius, then drop small regions of what is left
        if step == 0:
            keep = ~_eroded(neighbours, config.radius_cells)
        else:
            keep = _large_regions(neighbours, config.region_min_size**2)
        neighbours = _subset(neighbours[keep], keep)
        column, y = column[keep], y[keep]
    _, island = connected_components(_link_matrix(neighbours), directed=False)
    return NavMesh(
        hf.origin, hf.cell, hf.shape, column, y, neighbours, island.astype(np.int32), config.max_climb
    )


def _eroded(neighbours: np.ndarray, radius_cells: int) -> np.ndarray:
    """bool [N]: places within `radius_cells` of the floor's boundary, as Recast's erosion counts it: a
    boundary place (fewer than 4 links) is at 0, a step costs 2 straight and 3 diagonally, and places under
    2 * radius_cells are removed."""
    distance = np.where((neighbours >= 0).all(1), 255, 0)
    limit = 2 * radius_cells
    # Relax in link steps until nothing changes: Recast's two-pass transform in the layered grid.
    for _ in range(limit + 1):
        updated = distance.copy()
        for d in range(4):
            first = neighbours[:, d]
            linked = first >= 0
            updated[linked] = np.minimum(updated[linked], distance[first[linked]] + 2)
            second = np.where(linked, neighbours[np.maximum(first, 0), (d + 1) % 4], -1)
            diagonal = second >= 0
            updated[diagonal] = np.minimum(updated[diagonal], distance[second[diagonal]] + 3)
        if np.array_equal(updated, distance):
            break
        distance = updated
    return distance < limit


def _subset(neighbours: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Links among the kept places only, renumbered (`neighbours` rows may already be the kept ones)."""
    renumber = np.full(len(keep) + 1, -1, np.int32)
    renumber[:-1][keep] = np.arange(int(keep.sum()), dtype=np.int32)
    return renumber[neighbours]  # -1 indexes the trailing -1


def _link_matrix(neighbours: np.ndarray) -> csr_matrix:
    source, direction = np.nonzero(neighbours >= 0)
    target = neighbours[source, direction]
    n = len(neighbours)
    return csr_matrix((np.ones(len(source)), (source, target)), shape=(n, n))


def _large_regions(neighbours: np.ndarray, min_cells: int) -> np.ndarray:
    """bool [N]: places whose connected region has at least `min_cells` places."""
    if len(neighbours) == 0:
        return np.zeros(0, dtype=bool)
    _, labels = connected_components(_link_matrix(neighbours), directed=False)
    return np.bincount(labels)[labels] >= min_cells
