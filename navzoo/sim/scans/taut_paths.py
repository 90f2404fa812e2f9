"""habitat's shortest path and geodesic distance as Detour gives them: the way Dijkstra finds, pulled taut.

Dijkstra over the graph of navzoo.sim.scans.geodesics finds the way (round which side of each obstacle), but
its segments take 16 directions only, so a straight run comes out up to 2.75% long (1.4% on average over
directions). Detour's findStraightPath pulls the path through the navmesh polygons taut, and habitat's
geodesic distance is that path's length. Here the Dijkstra path is pulled taut over the same floor, greedily:
from each anchor the path goes straight to the last of the nodes after it that it sees one by one, and on
from there. A node is seen when the straight segment to it crosses linked places only (navzoo.sim.scans.
floors' DIRECTIONS), ending on a place the node lies on. The result is a path on the floor, never longer
than Dijkstra's; where the Dijkstra path touches the region's corners, as it does round obstacles, it is
the taut path. Segments are 3D chords, so a flight of stairs counts as its slope, as Detour's path does.
With several goals, as habitat does, the shortest of the taut paths to each.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numba import njit

from navzoo.sim.scans.geodesics import GeodesicGraph

ON_LINE = 1e-9  # crossings this close (in units of the segment) are one: the segment meets a grid vertex
ALONG_AXIS = 1e-9  # metres: a segment whose x or z changes by less runs along the grid


class Floor(Protocol):
    """What a search reads of its navmesh (navzoo.sim.scans.navmesh.NavMesh, which makes the searches)."""

    @property
    def origin(self) -> np.ndarray: ...

    @property
    def cell(self) -> float: ...

    @property
    def shape(self) -> tuple[int, int]: ...

    @property
    def column(self) -> np.ndarray: ...

    @property
    def neighbours(self) -> np.ndarray: ...

    @property
    def geodesics(self) -> GeodesicGraph: ...

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def ways_in(self, place: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def search(self, goals: np.ndarray) -> GoalSearch: ...


@dataclass(frozen=True)
class GoalSearch:
    """One Dijkstra search from a set of sources on a navmesh (GeodesicGraph.search): its distance `field`
    [places], and the taut shortest path to the nearest source from any start."""

    navmesh: Floor
    field: np.ndarray  # float32 [places]
    predecessors: np.ndarray  # int32 [nodes + rows]: each node's next node towards the sources
    stop: int  # the node that stands for the sources
    places: np.ndarray  # int64 [S]: the sources' places
    points: np.ndarray  # float64 [S, 3]: the sources on them
    _each: dict[int, GoalSearch] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def path(self, start: np.ndarray) -> np.ndarray:
        """float64 [K, 3]: the taut shortest path from `start` [3] to the nearest source; empty when the start
        is off the navmesh or cannot reach one."""
        if len(self.points) <= 1:
            return self._path(start)
        # habitat's multi-goal path: goals in order of their straight-line distance, each searched (once)
        # unless the straight line alone is longer than the best path so far.
        best, best_length = np.zeros((0, 3)), math.inf
        for goal in np.argsort(np.linalg.norm(self.points - np.asarray(start), axis=1)):
            if np.linalg.norm(self.points[goal] - np.asarray(start)) >= best_length:
                break
            if goal not in self._each:
                self._each[goal] = self.navmesh.search(self.points[goal][None])
            path = self._each[goal].path(start)
            if (length := path_length(path)) < best_length:
                best, best_length = path, length
        return best

    def _path(self, start: np.ndarray) -> np.ndarray:
        """The taut path from `start` to the one source."""
        navmesh, graph = self.navmesh, self.navmesh.geodesics
        place, point = navmesh.project(np.asarray(start, np.float64).reshape(1, 3))
        if place[0] < 0:
            return np.zeros((0, 3))
        # The first node as the simulator measures a point's distance (NavMesh.ways_in).
        around, hop = navmesh.ways_in(place, point)
        cost = np.where(around[0] >= 0, self.field[np.maximum(around[0], 0)] + hop[0], np.inf)
        if not np.isfinite(cost.min()):
            return np.zeros((0, 3))
        nodes = _trace(self.predecessors, int(around[0, np.argmin(cost)]), self.stop, len(graph.position))
        points = np.concatenate([point, graph.position[nodes], self.points])  # one source
        lying_on = np.full((len(points), graph.owners.shape[1]), -1, np.int32)
        lying_on[0, 0], lying_on[-1, 0] = place[0], self.places[0]
        lying_on[1:-1] = graph.owners[nodes]
        anchors = _pull(
            points,
            lying_on,
            navmesh.origin[0],
            navmesh.origin[2],
            navmesh.shape[1],
            navmesh.cell,
            navmesh.column,
            navmesh.neighbours,
        )
        return points[anchors]

    def distance(self, start: np.ndarray) -> float:
        """habitat's geodesic distance from `start` [3]: the taut path's length; inf if there is none."""
        return path_length(self.path(start))


def path_length(points: np.ndarray) -> float:
    """The length of a path [K, 3], its segments' 3D chords; inf for an empty one."""
    if len(points) == 0:
        return math.inf
    return float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())


@njit(cache=True)
def _trace(predecessors, first, stop, nodes):
    """The graph nodes from `first` along `predecessors` to the node before `stop` (other rows' source
    nodes, numbered from `nodes`, are passed over: the path goes straight through their points)."""
    path = [first]
    at = first
    while predecessors[at] != stop and predecessors[at] >= 0:
        at = predecessors[at]
        if at < nodes:
            path.append(at)
    return np.array(path, dtype=np.int64)


@njit(cache=True)
def _pull(points, lying_on, origin_x, origin_z, cols, cell, column, neighbours):
    """Indices of the anchors of the path `points` [K, 3] pulled taut; `lying_on` [K, 4] the places each
    point lies on (-1 padded). Consecutive points are joined in any case: they are the graph's edges."""
    count = len(points)
    anchors = [0]
    i = 0
    while i < count - 1:
        j = i + 1
        while j + 1 < count and _sees(
            points, lying_on, i, j + 1, origin_x, origin_z, cols, cell, column, neighbours
        ):
            j += 1
        anchors.append(j)
        i = j
    return np.array(anchors, dtype=np.int64)


@njit(cache=True)
def _sees(points, lying_on, i, j, origin_x, origin_z, cols, cell, column, neighbours):
    """Whether the segment from point i to point j crosses linked places only, from a place point i lies on
    to one point j lies on."""
    for k in range(lying_on.shape[1]):
        place = lying_on[i, k]
        if place < 0:
            break
        end = _walk(
            place,
            points[i, 0],
            points[i, 2],
            points[j, 0],
            points[j, 2],
            origin_x,
            origin_z,
            cols,
            cell,
            column,
            neighbours,
        )
        for m in range(lying_on.shape[1]):
            if end >= 0 and lying_on[j, m] == end:
                return True
    return False


@njit(cache=True)
def _walk(place, ax, az, bx, bz, origin_x, origin_z, cols, cell, column, neighbours):
    """The place the straight segment a-b (x, z) ends on, walking from `place` (whose cell holds a) across
    the cell sides it crosses; -1 where a side it crosses has no link. At a grid vertex either way round
    will do."""
    row, col = column[place] // cols, column[place] % cols
    # DIRECTIONS indices of the sides crossed: +x 2, -x 0; +z 1, -z 3.
    t_x, dt_x, side_x = _first_crossing(ax, bx, origin_x + col * cell, cell, 2, 0)
    t_z, dt_z, side_z = _first_crossing(az, bz, origin_z + row * cell, cell, 1, 3)
    at = place
    while min(t_x, t_z) < 1 - ON_LINE:
        if abs(t_x - t_z) <= ON_LINE:
            via = neighbours[at, side_x]
            nxt = neighbours[via, side_z] if via >= 0 else -1
            if nxt < 0:
                via = neighbours[at, side_z]
                nxt = neighbours[via, side_x] if via >= 0 else -1
            t_x += dt_x
            t_z += dt_z
        elif t_x < t_z:
            nxt = neighbours[at, side_x]
            t_x += dt_x
        else:
            nxt = neighbours[at, side_z]
            t_z += dt_z
        if nxt < 0:
            return -1
        at = nxt
    return at


@njit(cache=True)
def _first_crossing(a, b, low, cell, up, down):
    """Along one axis, for a segment from a to b starting in the cell [low, low + cell]: the segment's
    parameter where it first crosses a cell boundary, the parameter per cell, and the side crossed (`up`
    going up the axis, else `down`); never, for a segment along the other axis."""
    d = b - a
    if d > ALONG_AXIS:
        return (low + cell - a) / d, cell / d, up
    if d < -ALONG_AXIS:
        return (low - a) / d, -cell / d, down
    return math.inf, math.inf, up
