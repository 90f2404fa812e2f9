"""habitat's navmesh rules on small meshes (docs/design/habitat-sim-rules.md §4)."""

import json
import math
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from navzoo.errors import SceneError
from navzoo.sim.scans.cache import cached_navmesh
from navzoo.sim.scans.navmesh import NavmeshConfig, build_navmesh
from navzoo.sim.scans.stage import load_stage
from tests.sim.scans.meshes import (
    Builder,
    box_room,
    fine_room,
    holed_floor,
    leaning_room,
    ramp,
    stairs,
    table_room,
)


def navmesh_of(builder_or_mesh, tmp_path: Path, name: str = "scene.ply", **config):
    mesh = builder_or_mesh.mesh() if isinstance(builder_or_mesh, Builder) else builder_or_mesh
    path = tmp_path / name
    mesh.export(path)
    return build_navmesh(load_stage(path), NavmeshConfig(**config))


def test_box_room(tmp_path):
    navmesh = navmesh_of(box_room(4, 3, 2.5), tmp_path)
    assert navmesh.is_navigable([[2, 0, 1.5], [2, 0.4, 1.5]]).all()
    # Within the agent's radius (and a cell) of a wall, or too far above the floor: not navigable.
    assert not navmesh.is_navigable([[0.08, 0, 1.5], [2, 0.6, 1.5], [5, 0, 1.5]]).any()
    x = navmesh.positions[:, 0]
    assert 0.1 < x.min() < 0.2 and 3.8 < x.max() < 3.9
    assert len(np.unique(navmesh.island)) == 1
    np.testing.assert_allclose(navmesh.floor_height([[2, 1.0, 1.5]]), [0.0], atol=1e-6)
    snapped = navmesh.snap([[2, 1.0, 1.5], [5, 0, 1.5], [50, 0, 1.5]])
    np.testing.assert_allclose(snapped[0], [2, 0, 1.5])
    assert navmesh.is_navigable(snapped[1:2]).all() and np.isnan(snapped[2]).all()
    start, goal = np.array([0.5, 0, 0.5]), np.array([3.5, 0, 2.5])
    distance = navmesh.geodesic_distance(start, goal[None])
    assert np.linalg.norm(goal - start) <= distance < 1.03 * np.linalg.norm(goal - start)
    # Several goals: the nearest one counts.
    assert navmesh.geodesic_distance(start, np.array([goal, [0.6, 0, 0.5]])) == pytest.approx(0.1, abs=0.06)


@pytest.mark.parametrize("ceiling", [False, True])
def test_stairs_join_storeys_that_stay_apart(tmp_path, ceiling):
    navmesh = navmesh_of(stairs(rise=0.2, ceiling=ceiling), tmp_path)
    lower, upper = [8, 0.5, 3], [8, 2.5, 3]  # the same column, below and on the upper floor
    np.testing.assert_allclose(navmesh.floor_height([lower, upper]), [0.0, 2.0], atol=1e-5)
    assert navmesh.is_navigable([[8, 0, 3], [8, 2, 3]]).all()
    ground, top = np.array([1.0, 0, 0.75]), np.array([8.0, 2.0, 0.75])
    distance = navmesh.geodesic_distance(ground, top[None])
    assert math.isfinite(distance)
    assert distance >= np.linalg.norm(top - ground)
    assert navmesh.island_of(np.array([ground, top]))[0] == navmesh.island_of(top[None])[0]


def test_stacked_floors_are_layers_whatever_their_spacing(tmp_path):
    """An upper floor sloping from 2.9 to 3.1 m over a ground floor: every place on it is the second
    layer of its column, so a storey does not split where its height crosses a multiple of anything."""
    scene = Builder().floor(0, 10, 0, 4, 0.0).quad((6, 2.9, 0), (4, 0.2, 0), (0, 0, 4), (0, 1, 0))
    navmesh = navmesh_of(scene, tmp_path)
    layers = navmesh.layer_of(np.arange(navmesh.size))
    upper = navmesh.y > 2.0
    assert upper.any() and (layers[upper] == 1).all() and (layers[~upper] == 0).all()
    ends = navmesh.project(np.array([[6.5, 3.0, 2.0], [9.5, 3.2, 2.0], [8.0, 0.0, 2.0]]))[0]
    assert navmesh.layer_of(ends).tolist() == [1, 1, 0]
    assert navmesh.layer_of(np.array([-1])).tolist() == [0]


def test_a_step_higher_than_the_climb_cuts_the_stairs(tmp_path):
    navmesh = navmesh_of(stairs(rise=0.3, top=2.1), tmp_path)
    ground, top = np.array([1.0, 0, 0.75]), np.array([8.0, 2.1, 0.75])
    assert navmesh.is_navigable(np.array([ground, top])).all()
    assert navmesh.geodesic_distance(ground, top[None]) == math.inf
    islands = navmesh.island_of(np.array([ground, top]))
    assert islands[0] != islands[1]


@pytest.mark.parametrize(("angle", "walkable"), [(30, True), (40, True), (50, False)])
def test_ramps_up_to_the_slope_limit(tmp_path, angle, walkable):
    navmesh = navmesh_of(ramp(angle), tmp_path)
    ground, platform = np.array([1.0, 0, 0.75]), np.array([11.0, 1.0, 1.5])
    assert navmesh.is_navigable(np.array([ground, platform])).all()
    assert math.isfinite(navmesh.geodesic_distance(ground, platform[None])) == walkable


def test_holes_in_the_floor(tmp_path):
    navmesh = navmesh_of(holed_floor(), tmp_path)
    assert not navmesh.is_navigable([[3, 0, 3], [1.95, 0, 3], [3, 0, 4.05]]).any()
    assert navmesh.is_navigable([[1.5, 0, 3], [4.5, 0, 3], [3, 0, 1.5]]).all()
    west, east = np.array([1.5, 0, 3]), np.array([4.5, 0, 3])
    assert navmesh.geodesic_distance(west, east[None]) > 3.5  # around the hole, not across it


def test_leaning_wall_needs_headroom(tmp_path):
    navmesh = navmesh_of(leaning_room(), tmp_path)
    # Under the wall the headroom is 2.5 x: under the agent's 1.6 m (8 cells of 0.2 m) for x < 0.64.
    assert not navmesh.is_navigable([[0.3, 0, 2], [0.6, 0, 2]]).any()
    assert navmesh.is_navigable([[0.9, 0, 2], [3, 0, 2]]).all()


def test_open_top_room(tmp_path):
    scene = Builder().floor(0, 4, 0, 3, 0.0)
    for corner, along, normal in (((0, 0, 0), (4, 0, 0), (0, 0, 1)), ((0, 0, 3), (4, 0, 0), (0, 0, -1))):
        scene.quad(corner, along, (0, 2.5, 0), normal)
    navmesh = navmesh_of(scene, tmp_path)
    assert navmesh.is_navigable([[2, 0, 1.5]]).all() and not navmesh.is_navigable([[2, 0, 0.05]]).any()


def test_degenerate_and_duplicate_triangles_change_nothing(tmp_path):
    clean = navmesh_of(box_room(4, 3, 2.5), tmp_path, "clean.ply")
    messy = box_room(4, 3, 2.5)
    messy.triangles += list(messy.triangles)  # every triangle twice
    messy.triangles.append(np.array([[1, 0, 1], [2, 0, 1], [3, 0, 1]], float))  # zero area, collinear
    messy.triangles.append(np.array([[1, 1, 1], [1, 1, 1], [1, 1, 1]], float))  # a point
    navmesh = navmesh_of(messy, tmp_path, "messy.ply")
    np.testing.assert_array_equal(navmesh.column, clean.column)


def test_inside_out_room_is_repaired_with_a_warning(tmp_path):
    right = navmesh_of(box_room(4, 3, 2.5), tmp_path, "right.ply")
    inside_out = box_room(4, 3, 2.5)
    inside_out.triangles = [t[::-1] for t in inside_out.triangles]
    with pytest.warns(UserWarning, match="inside-out"):
        navmesh = navmesh_of(inside_out, tmp_path, "flipped.ply")
    np.testing.assert_array_equal(navmesh.column, right.column)
    np.testing.assert_allclose(navmesh.y, right.y)
    # habitat's reading as is: the floor faces down, and the roof (the ceiling's back) is the floor.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        as_is = navmesh_of(inside_out, tmp_path, "flipped.ply", repair_winding=False)
    np.testing.assert_allclose(as_is.floor_height([[2, 3, 1.5]]), [2.5])


def test_a_lone_flipped_floor_is_repaired_or_fails_clearly(tmp_path):
    floor = Builder().quad((0, 0, 0), (0, 0, 4), (4, 0, 0), (0, -1, 0))  # facing down
    with pytest.warns(UserWarning, match="reversed winding"):
        navmesh = navmesh_of(floor, tmp_path)
    assert navmesh.is_navigable([[2, 0, 2]]).all()
    with pytest.raises(SceneError, match=r"scene\.ply has no navigable floor"):
        navmesh_of(floor, tmp_path, repair_winding=False)


@pytest.mark.parametrize(("ceiling", "top_navigable"), [(2.5, False), (3.0, True)])
def test_table_top(tmp_path, ceiling, top_navigable):
    navmesh = navmesh_of(table_room(ceiling), tmp_path)
    under, top, beside = np.array([3, 0, 2.6]), np.array([3, 0.97, 2.6]), np.array([1, 0, 1])
    # The floor under the table has 0.93 m of headroom: no place for a 1.5 m agent.
    assert not navmesh.is_navigable(under[None]).any()
    np.testing.assert_allclose(
        navmesh.floor_height(top[None] + [0, 0.5, 0]), [0.97] if top_navigable else [np.nan]
    )
    assert navmesh.is_navigable(beside[None]).all()
    assert navmesh.is_navigable(top[None]).item() == top_navigable
    if top_navigable:  # its own island: no climb leads up to it
        assert navmesh.geodesic_distance(beside, top[None]) == math.inf
        assert navmesh.island_of(beside[None])[0] != navmesh.island_of(top[None])[0]


def test_wrongly_oriented_stage(tmp_path):
    # A floor with a low kerb, as a z-up file holds it (world (x, y, z) is the file's (x, z, -y)).
    scene = (
        Builder()
        .quad((0, 0, 0), (4, 0, 0), (0, 3, 0), (0, 0, 1))
        .quad((0, 0, 0), (4, 0, 0), (0, 0, 0.1), (0, 1, 0))
    )
    path = tmp_path / "floor.glb"
    scene.mesh().export(path)
    navmesh = build_navmesh(load_stage(path))  # habitat's default for a glb: z up
    assert navmesh.is_navigable([[2, 0, -1.5]]).all()
    (tmp_path / "floor.stage_config.json").write_text(json.dumps({"up": [0, 1, 0], "front": [0, 0, -1]}))
    with pytest.raises(SceneError, match=r"floor\.glb has no navigable floor.*floor\.stage_config\.json"):
        build_navmesh(load_stage(path))
    (tmp_path / "floor.stage_config.json").write_text(json.dumps({"up": [0, 0, 1], "front": [0, 1, 0]}))
    assert build_navmesh(load_stage(path)).is_navigable([[2, 0, -1.5]]).all()


def test_cache_round_trip(tmp_path):
    path = tmp_path / "room.ply"
    box_room(4, 3, 2.5).mesh().export(path)
    stage = load_stage(path)
    first = cached_navmesh(stage, cache_dir=tmp_path / "cache")
    files = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len([f for f in files if f.endswith(".npz")]) == 1 and not [f for f in files if "tmp" in f]
    again = cached_navmesh(stage, cache_dir=tmp_path / "cache")
    for name, array in first.arrays().items():
        np.testing.assert_array_equal(again.arrays()[name], array)
    cached_navmesh(stage, NavmeshConfig(agent_radius=0.2), cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 2
    field = again.distance_field(np.array([[2, 0, 1.5]]))
    assert field.shape == (again.size,) and np.isfinite(field).all()


@pytest.mark.slow
def test_a_million_triangles(tmp_path):
    mesh = fine_room(28.5, 0.04)
    path = tmp_path / "big.ply"
    mesh.export(path)
    started = time.perf_counter()
    stage = load_stage(path)
    loaded = time.perf_counter()
    navmesh = build_navmesh(stage)
    built = time.perf_counter()
    field = navmesh.distance_field(np.array([[14, 0, 14]]))
    done = time.perf_counter()
    print(
        f"\n{len(stage.faces):,} triangles: load {loaded - started:.2f} s, navmesh {built - loaded:.2f} s "
        f"({navmesh.size:,} places), distance field {done - built:.2f} s"
    )
    assert len(stage.faces) > 1_000_000
    assert np.isfinite(field).mean() > 0.99
    assert built - started < 60
