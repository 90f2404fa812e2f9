"""Geodesic distances on the navigation grid against known shortest paths."""

import math

import numpy as np

from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import Scene, generate_scene
from tests.support import box_room

# 16-neighbour grid paths are at most 1/cos(atan(1/2) / 2) - 1 = 2.7% longer than straight lines, plus up to
# half a navigation cell at each end.
RELATIVE, ABSOLUTE = 0.03, 0.125


def test_open_room_distance_is_euclidean_within_grid_tolerance(room):
    nav = NavGrid(Scene.from_arrays(room, 2.5), 0.1)
    goal = nav.cell_of(np.array([0.5, 0.5]))
    field = nav.distance_field(*goal)
    for point in ([3.4, 3.4], [3.4, 0.6], [1.0, 3.0]):
        cell = nav.cell_of(np.array(point))
        exact = np.linalg.norm(nav.cell_centres(*cell) - nav.cell_centres(*goal))
        assert exact <= field[cell] <= exact * (1 + RELATIVE) + 1e-6


def test_distance_around_a_wall_equals_the_shortest_path():
    heights = box_room(24)  # 6 m x 6 m
    heights[1:16, 12] = 2.5  # wall from the bottom up to y = 4.0 m, at x in [3.0, 3.25]
    nav = NavGrid(Scene.from_arrays(heights, 2.5), 0.1)
    start, goal = np.array([1.5625, 1.0625]), np.array([4.6875, 1.0625])
    field = nav.distance_field(*nav.cell_of(goal))
    # The path bends round the wall's end: it must clear the corners (3.0, 4.0) and (3.25, 4.0) by the radius.
    corner_a, corner_b = np.array([3.0 - 0.1, 4.0 + 0.1]), np.array([3.25 + 0.1, 4.0 + 0.1])
    exact = (
        np.linalg.norm(corner_a - start)
        + np.linalg.norm(corner_b - corner_a)
        + np.linalg.norm(goal - corner_b)
    )
    got = field[nav.cell_of(start)]
    assert math.isclose(got, exact, rel_tol=RELATIVE, abs_tol=ABSOLUTE), (got, exact)
    assert got > np.linalg.norm(goal - start) + 3.0  # far longer than the straight line through the wall


def test_geodesic_is_never_below_euclidean_in_generated_scenes():
    for sid in ("apartment/val/00003", "office-l/val/00001"):
        nav = NavGrid(generate_scene(sid), 0.1)
        cells = np.argwhere(nav.island)
        rng = np.random.default_rng(0)
        source = cells[rng.integers(len(cells))]
        field = nav.distance_field(*source)
        euclid = np.linalg.norm(
            nav.cell_centres(cells[:, 0], cells[:, 1]) - nav.cell_centres(*source), axis=1
        )
        assert (field[cells[:, 0], cells[:, 1]] >= euclid - 1e-4).all()
        assert np.isfinite(field[nav.island]).all()
        assert np.isinf(field[~nav.passable]).all()
