"""Geodesic distances on a navmesh against the taut path: the shortest path inside the union of its places'
cells, which Detour's string pulling follows. The graph's fields (navzoo.sim.scans.geodesics) come within
its 16-neighbour metric of it; shortest paths and geodesic distances (navzoo.sim.scans.taut_paths) pull the
graph's path taut and match it here."""

import itertools

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

from navzoo.sim.scans.floors import DIRECTIONS
from navzoo.sim.scans.geodesics import GeodesicGraph
from navzoo.sim.scans.navmesh import NavmeshConfig, build_navmesh
from navzoo.sim.scans.stage import load_stage
from tests.sim.scans import meshes
from tests.sim.scans.meshes import Builder

# The 16-neighbour metric's worst case: halfway between a straight and a knight move.
SIXTEEN_NEIGHBOUR_BOUND = 1 / np.cos(np.arctan(0.5) / 2)


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory):
    """A 6 m x 4 m room with a thin wall from the z = 0 side to z = 2.51 m at x = 3.01 .. 3.09 m."""
    scene = Builder().box((0, 0, 0), (6, 2.5, 4), inward=True).box((3.01, 0, 0), (3.09, 2.5, 2.51))
    path = tmp_path_factory.mktemp("geodesics") / "partition.ply"
    scene.mesh().export(path)
    return build_navmesh(load_stage(path), NavmeshConfig())


def taut_length(navmesh, start: np.ndarray, goal: np.ndarray) -> float:
    """The shortest path from `start` to `goal` (x, z) inside the closed union of the (one storey's) place
    cells: Dijkstra over the visibility graph of the union's reflex corners, segments checked every 5 mm."""
    rows, cols = navmesh.shape
    free = np.zeros(rows * cols, bool)
    free[navmesh.column] = True
    free = free.reshape(rows, cols)
    padded = np.pad(free, 1)
    around = padded[:-1, :-1].astype(int) + padded[1:, :-1] + padded[:-1, 1:] + padded[1:, 1:]
    row, col = np.nonzero(around == 3)  # grid points with 3 of their 4 cells on the floor
    corners = np.stack([navmesh.origin[0] + col * navmesh.cell, navmesh.origin[2] + row * navmesh.cell], 1)

    def on_floor(x: float, z: float) -> bool:
        for dx, dz in itertools.product((-1e-6, 1e-6), repeat=2):
            c = int(np.floor((x + dx - navmesh.origin[0]) / navmesh.cell))
            r = int(np.floor((z + dz - navmesh.origin[2]) / navmesh.cell))
            if 0 <= r < rows and 0 <= c < cols and free[r, c]:
                return True
        return False

    points = np.concatenate([[start], [goal], corners])
    weights = np.zeros((len(points), len(points)))
    for i, j in itertools.combinations(range(len(points)), 2):
        steps = max(2, int(np.linalg.norm(points[j] - points[i]) / 0.005))
        segment = points[i] + (points[j] - points[i]) * np.linspace(0, 1, steps)[:, None]
        if all(on_floor(x, z) for x, z in segment):
            weights[i, j] = weights[j, i] = np.linalg.norm(points[j] - points[i])
    return float(dijkstra(weights, indices=[0])[0, 1])


def place_centre(navmesh, x: float, z: float) -> np.ndarray:
    return navmesh.positions[navmesh.place_below(np.array([[x, 0.1, z]]))[0]]


@pytest.mark.parametrize(
    "start, goal, around_the_wall",
    [
        ((1.0, 1.0), (5.0, 1.0), True),
        ((1.02, 0.52), (4.33, 1.87), True),
        ((2.5, 0.4), (3.6, 0.4), True),  # round the wall's end, legs near the metric's worst angle
        ((0.5, 3.5), (5.5, 3.5), False),
        ((1.0, 1.0), (1.5, 3.0), False),  # at the metric's worst angle
    ],
)
def test_geodesics_follow_the_taut_path(partitioned, start, goal, around_the_wall):
    start, goal = place_centre(partitioned, *start), place_centre(partitioned, *goal)
    taut = taut_length(partitioned, start[[0, 2]], goal[[0, 2]])
    straight = float(np.linalg.norm(goal - start))
    assert (taut > straight + 0.5) == around_the_wall
    graph = partitioned.distance_field(goal[None])[partitioned.place_below(start[None])[0]]
    # Never shorter than the taut path (every segment stays on the floor); longer only by the 16-neighbour
    # metric's angular error. Paths through cell centres alone would add half a cell of clearance round the
    # wall's end (about 1.5% more on the third pair, past the bound).
    assert taut - 1e-6 <= graph <= taut * SIXTEEN_NEIGHBOUR_BOUND
    if goal[2] == start[2] and not around_the_wall:
        assert graph == pytest.approx(straight, abs=1e-5)  # along a row: exact
    # Pulled taut, the graph's path is the taut path: straight in line of sight, round the wall's end past it.
    path = partitioned.shortest_path(start, goal[None])
    assert partitioned.geodesic_distance(start, goal[None]) == pytest.approx(taut, abs=1e-6)
    np.testing.assert_allclose(path[[0, -1]], [start, goal])
    assert (len(path) > 2) == around_the_wall


def test_goals_that_share_corners_count_once(partitioned):
    """Two goals in neighbouring places reach the corners they share once: the field is the smaller of the
    two goals' fields, not a sum."""
    goals = np.array([place_centre(partitioned, 1.0, 3.0), place_centre(partitioned, 1.05, 3.0)])
    goals[:, 0] += [0.02, -0.02]
    both = partitioned.distance_field(goals)
    each = np.minimum(partitioned.distance_field(goals[:1]), partitioned.distance_field(goals[1:]))
    np.testing.assert_allclose(both, each, atol=1e-5)
    places = partitioned.place_below(goals + np.array([0, 0.1, 0]))
    rows = partitioned.place_fields(places)
    centres = partitioned.distance_field(partitioned.positions[places])
    np.testing.assert_allclose(rows.min(0), centres, atol=1e-5)


def test_a_side_two_unlinked_places_share_is_one_segment():
    """Places (0, 1) and (1, 1) of a 2 x 3 grid are not linked, but their shared side's corners are merged
    through the linked places round both its ends: that side is one segment of its own length, not two that
    a sparse matrix would add up."""
    cell = 0.05
    rows, cols = np.divmod(np.arange(6), 3)
    centres = np.stack([(cols + 0.5) * cell, np.zeros(6), (rows + 0.5) * cell], 1)
    neighbours = np.full((6, 4), -1, np.int32)
    for place, (row, col) in enumerate(zip(rows, cols, strict=True)):
        for d, (d_row, d_col) in enumerate(DIRECTIONS):
            r, c = row + d_row, col + d_col
            if 0 <= r < 2 and 0 <= c < 3 and {place, r * 3 + c} != {1, 4}:
                neighbours[place, d] = r * 3 + c
    graph = GeodesicGraph.of(centres, cell, neighbours)
    low, high, length = graph.edges
    assert len(set(zip(low.tolist(), high.tolist(), strict=True))) == len(low)
    shared = graph.corner[1][[2, 3]]  # the high side of place (0, 1): its corners (1, 0) and (1, 1)
    assert set(shared.tolist()) == set(graph.corner[4][[0, 1]].tolist())
    on_side = ((low == shared.min()) & (high == shared.max())) | (
        (low == shared.max()) & (high == shared.min())
    )
    np.testing.assert_allclose(length[on_side], [cell])


def test_shortest_paths_go_up_the_stairs_not_through_the_slab(tmp_path):
    """From the ground floor under the upper storey's slab to the point on the slab right above: the taut path
    walks to the flight, climbs it and comes back, every point of it over the floor it is on."""
    path = tmp_path / "stairs.ply"
    meshes.stairs(0.15).mesh().export(path)
    navmesh = build_navmesh(load_stage(path))
    under, above = np.array([8.0, 0.0, 3.0]), np.array([8.0, 2.0, 3.0])
    points = navmesh.shortest_path(under, above[None])
    length = navmesh.geodesic_distance(under, above[None])
    # West 6 m to the flight's foot at x = 2.1, up 3.9 m of steps, then back east: about 12.5 m.
    assert 11.5 < length < navmesh.distance_field(above[None])[navmesh.place_below(under[None])[0]] + 1e-5
    assert points[:, 0].min() < 2.6 and len(points) > 2
    for a, b in itertools.pairwise(points):
        samples = a + (b - a) * np.linspace(0, 1, int(np.linalg.norm(b - a) / 0.02) + 2)[:, None]
        # over a place of its own floor, or on the edge of one (the path touches the floor's corners)
        nudged = [samples + np.array([dx, 0, dz]) for dx, dz in itertools.product((-1e-6, 1e-6), repeat=2)]
        assert np.any([navmesh.is_navigable(n, max_y_delta=0.2) for n in nudged], axis=0).all()


def test_several_goals_take_the_shortest_taut_path(partitioned):
    """Goal a lies 2 m away at 13 degrees, the graph's worst angle (2.06 m on it); goal b 2.05 m away along
    a row (exact on it). The graph finds b nearer; habitat's multi-goal distance is the shortest taut path,
    a's."""
    start = place_centre(partitioned, 1.0, 3.4)
    angle = np.radians(13)
    a = start + 2.0 * np.array([np.cos(angle), 0, -np.sin(angle)])
    b = start + np.array([2.05, 0, 0])
    graph = partitioned.distance_field(np.stack([a, b]))[partitioned.place_below(start[None])[0]]
    assert graph == pytest.approx(2.05, abs=1e-4)
    assert partitioned.geodesic_distance(start, np.stack([b, a])) == pytest.approx(2.0, abs=1e-6)
    np.testing.assert_allclose(partitioned.shortest_path(start, np.stack([b, a]))[-1], a)
