"""The graph of geodesic distances on a navmesh: through its places' centres, and along the corners where
habitat's shortest paths turn.

Detour pulls its shortest path taut over the navmesh polygons, whose edges lie on cell boundaries of the
eroded region (docs/design/habitat-sim-rules.md §4), so a path turns at cell corners. Paths through cell
centres alone keep half a cell more clearance at every turn and come out a few percent long around a door;
paths over corners alone run along cell edges and start and end with a hop to a corner. So the graph has
both kinds of node:

- each place's centre, joined to its 16 neighbours (straight, diagonal and knight moves) when the cells the
  segment crosses are linked too, as navzoo.sim.navgrid does, and to its own 4 corners;
- each corner, one node for all linked places that share it, at their mean height, joined along each
  place's sides and diagonals and across the diagonals of two linked places (knight moves).

Every segment stays on the floor of linked places, and its length is 3D, so stairs count their rise. A
source (a goal point) reaches its place's centre and corners straight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, dijkstra

from navzoo.sim.scans.floors import DIRECTIONS

# The 16-neighbour moves between centres as chains of 4-neighbour links (DIRECTIONS indices); a diagonal
# needs both orders.
MOVES = (
    ((2,),),
    ((1,),),
    ((2, 1), (1, 2)),
    ((0, 1), (1, 0)),
    ((2, 1, 2),),
    ((1, 2, 1),),
    ((0, 1, 0),),
    ((1, 0, 1),),
)
# A place's corners as (d_row, d_col) from its cell's low corner.
CORNERS = ((0, 0), (0, 1), (1, 0), (1, 1))
# Corner segments inside one place, as pairs of CORNERS indices: its low sides and diagonals, and its high
# sides (by the DIRECTIONS index they face) where no linked place shares them as its low side.
INSIDE = ((0, 1), (0, 2), (0, 3), (1, 2))
HIGH_SIDES = {1: (2, 3), 2: (1, 3)}
# Knight moves over a place and its neighbour in DIRECTIONS index 1 (+row) or 2 (+col): from the place's
# corner to the neighbour's opposite one, across the two cells.
KNIGHTS = {1: ((0, 3), (1, 2)), 2: ((0, 3), (2, 1))}


@dataclass(frozen=True)
class GeodesicGraph:
    """Nodes 0..N-1 are the places' centres, N.. their corners; `edges` lists each segment once (a sparse
    matrix would add repeated ones up)."""

    centre: np.ndarray  # float64 [N, 3]
    corner: np.ndarray  # int64 [N, 4]: each place's corner nodes, in CORNERS order
    position: np.ndarray  # float64 [nodes, 3]
    edges: tuple[np.ndarray, np.ndarray, np.ndarray]  # (first node, second node: int32, length)
    owners: np.ndarray  # int32 [nodes, K]: the places a node lies on (a centre its own), -1 padded

    @classmethod
    def of(cls, centres: np.ndarray, cell: float, neighbours: np.ndarray) -> GeodesicGraph:
        """The graph of places at `centres` [N, 3] (cells `cell` wide) linked by `neighbours` [N, 4]."""
        n = len(centres)
        corner, corner_position = _corner_nodes(centres, cell, neighbours)
        corner += n
        position = np.concatenate([centres, corner_position])
        first, second = _centre_moves(neighbours)
        first += [np.repeat(np.arange(n), 4)]
        second += [corner.ravel()]
        for k, j in INSIDE:
            first.append(corner[:, k])
            second.append(corner[:, j])
        for d, (k, j) in HIGH_SIDES.items():
            unshared = neighbours[:, d] < 0
            first.append(corner[unshared, k])
            second.append(corner[unshared, j])
        for d, pairs in KNIGHTS.items():
            linked = np.flatnonzero(neighbours[:, d] >= 0)
            for k, j in pairs:
                first.append(corner[linked, k])
                second.append(corner[neighbours[linked, d], j])
        low, high = _once(np.concatenate(first), np.concatenate(second), len(position))
        length = np.linalg.norm(position[low] - position[high], axis=1)
        edges = (low.astype(np.int32), high.astype(np.int32), length)
        return cls(centres, corner, position, edges, _owners(corner, len(position)))

    @property
    def nbytes(self) -> int:
        """The memory its arrays hold."""
        return sum(a.nbytes for a in (self.centre, self.corner, self.position, *self.edges, self.owners))

    def fields(self, places: np.ndarray, points: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
        """float32 [count, N]: per row, every place's geodesic distance to the nearest of that row's sources,
        the points [S, 3] on places [S] whose row is `rows` [S]; inf where no source is reachable."""
        graph = self._with_sources(places, points, rows, count)
        n, nodes = len(self.centre), len(self.position)
        return dijkstra(graph, directed=False, indices=nodes + np.arange(count))[:, :n].astype(np.float32)

    def search(
        self, places: np.ndarray, points: np.ndarray, rows: np.ndarray, count: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """`fields`, and with them int32 [count, nodes + count]: each node's predecessor on its way to the
        row's sources (node `nodes + row` stands for them; negative where there is none)."""
        graph = self._with_sources(places, points, rows, count)
        n, nodes = len(self.centre), len(self.position)
        field, before = dijkstra(
            graph, directed=False, indices=nodes + np.arange(count), return_predecessors=True
        )
        return field[:, :n].astype(np.float32), before.astype(np.int32)

    def _with_sources(self, places: np.ndarray, points: np.ndarray, rows: np.ndarray, count: int):
        """The graph with one extra node per row of sources (`fields`' arguments)."""
        nodes = len(self.position)
        low, high, length = self.edges
        # One extra node per row reaches its sources' centres and corners straight (the shortest, where
        # sources share one: a sparse matrix would add repeated entries up).
        entry = np.repeat(nodes + np.asarray(rows, np.int64), 5)
        reached = np.concatenate([np.asarray(places)[:, None], self.corner[places]], 1).ravel()
        straight = np.linalg.norm(self.position[reached].reshape(-1, 5, 3) - points[:, None], axis=2).ravel()
        order = np.lexsort((straight, reached, entry))
        first = np.ones(len(order), bool)
        first[1:] = (np.diff(entry[order]) != 0) | (np.diff(reached[order]) != 0)
        keep = order[first]
        return coo_matrix(
            (
                np.concatenate([length, straight[keep]]),
                (np.concatenate([low, entry[keep]]), np.concatenate([high, reached[keep]])),
            ),
            shape=(nodes + count, nodes + count),
        ).tocsr()


def _once(a: np.ndarray, b: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The node pairs (a, b) with each segment once, whichever way round: a sparse matrix would add a repeated
    one's lengths up. (A high side left out above can still repeat a neighbour's low side where the two
    places are not linked but their corners are merged through places linked round both ends.)"""
    key = np.sort(np.minimum(a, b) * count + np.maximum(a, b))
    key = key[np.concatenate([[True], key[1:] != key[:-1]])[: len(key)]]
    return key // count, key % count


def _owners(corner: np.ndarray, nodes: int) -> np.ndarray:
    """int32 [nodes, K]: the places each node lies on: a centre node its place, a corner node the places
    that share it (4 round a vertex of one floor; more only where linked floors wind round it), -1 padded."""
    n = len(corner)
    node = corner.ravel()
    place = np.repeat(np.arange(n, dtype=np.int32), 4)
    order = np.argsort(node, kind="stable")
    node, place = node[order], place[order]
    starts = np.flatnonzero(np.concatenate([[True], node[1:] != node[:-1]]))
    rank = np.arange(len(node)) - np.repeat(starts, np.diff(np.append(starts, len(node))))
    owners = np.full((nodes, max(4, int(rank.max(initial=0)) + 1)), -1, np.int32)
    owners[:n, 0] = np.arange(n)
    owners[node, rank] = place
    return owners


def _centre_moves(neighbours: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The 16-neighbour moves between centres, as (first places, second places) lists."""
    every = np.arange(len(neighbours))
    sources, targets = [], []
    for chains in MOVES:
        ends = []
        for chain in chains:
            at = every
            for direction in chain:
                at = np.where(at >= 0, neighbours[np.maximum(at, 0), direction], -1)
            ends.append(at)
        ok = ends[0] >= 0
        for other in ends[1:]:
            ok &= other == ends[0]
        sources.append(every[ok])
        targets.append(ends[0][ok])
    return sources, targets


def _corner_nodes(centres: np.ndarray, cell: float, neighbours: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 [N, 4] each place's corner node from 0, float64 [corners, 3] their positions): a corner linked
    places share is one node, at the mean of their floor heights."""
    n = len(centres)
    slot = np.arange(4 * n).reshape(n, 4)
    same_a, same_b = [], []
    for d, (d_row, d_col) in enumerate(DIRECTIONS):
        linked = np.flatnonzero(neighbours[:, d] >= 0)
        for k, (a, b) in enumerate(CORNERS):
            if (a - d_row, b - d_col) in CORNERS:
                same_a.append(slot[linked, k])
                same_b.append(slot[neighbours[linked, d], CORNERS.index((a - d_row, b - d_col))])
    a, b = np.concatenate(same_a), np.concatenate(same_b)
    count, label = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(4 * n, 4 * n)))
    corner = label.reshape(n, 4).astype(np.int64)
    offsets = (np.asarray(CORNERS, np.float64) - 0.5) * cell  # (d_row, d_col) = (dz, dx)
    xyz = np.repeat(centres[:, None], 4, axis=1)
    xyz[..., 0] += offsets[None, :, 1]
    xyz[..., 2] += offsets[None, :, 0]
    members = np.bincount(corner.ravel(), minlength=count)
    position = np.stack([np.bincount(corner.ravel(), xyz[..., i].ravel(), count) for i in range(3)], 1)
    return corner, position / members[:, None]
