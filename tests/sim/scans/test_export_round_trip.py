"""navzoo's own scenes, exported as habitat scene meshes (`navzoo export-scenes`) and read back as scans:
the navmesh must agree with the native navigation grid (navzoo.sim.navgrid) on the same scene."""

import numpy as np
from scipy import ndimage

from navzoo.interop.habitat_scenes import CONFIG_NAME, SCENES_FOLDER, export_scenes
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scans.navmesh import build_navmesh
from navzoo.sim.scans.stage import load_stage
from navzoo.sim.scenes import generate_scene, scene_id

AGENT_RADIUS = 0.1  # habitat's, and the navmesh's default


def habitat_points(xy: np.ndarray) -> np.ndarray:
    """navzoo floor points (x, y) [..., 2] at height 0 in habitat's frame (x, 0, -y) (navzoo.sim.mesh)."""
    return np.stack([xy[..., 0], np.zeros(xy.shape[:-1]), -xy[..., 1]], -1).reshape(-1, 3)


def test_exported_scene_navigates_like_the_native_grid(tmp_path):
    sid = scene_id("apartment-s", "val", 0)
    export_scenes(tmp_path, split="val", families=("apartment-s",), count=1, episodes_per_scene=1)
    root = tmp_path / SCENES_FOLDER
    stage = load_stage(root / f"{sid}.glb", root / CONFIG_NAME)  # the dataset config says y up
    navmesh = build_navmesh(stage)
    grid = NavGrid(generate_scene(sid), AGENT_RADIUS)

    rows, cols = grid.shape
    centres = grid.cell_centres(np.arange(rows)[:, None], np.arange(cols)[None, :])
    points = habitat_points(centres)
    height = navmesh.floor_height(points)
    on_floor = (np.abs(height) < 0.1).reshape(rows, cols)  # furniture tops are islands of their own
    # The two grids (0.125 m and 0.05 m cells, erosion by a disc or by Recast's chamfer) draw a boundary up
    # to a cell apart; compare away from the native grid's boundary.
    boundary = ndimage.binary_dilation(grid.free, np.ones((3, 3))) & ~ndimage.binary_erosion(
        grid.free, np.ones((3, 3))
    )
    agree_all = (on_floor == grid.free).mean()
    agree = (on_floor == grid.free)[~boundary].mean()
    print(f"\n{sid}: navigable cells agree on {agree_all:.2%} of all, {agree:.2%} away from boundaries")
    assert agree >= 0.99

    # Geodesic distances between places both grids stand on, far enough apart to matter. In line of sight
    # (native within 3% of the straight line, its 16-neighbour metric) they agree within 2%. Around walls
    # the navmesh's paths are longer: habitat's rules keep 0.15 m from a wall (the wall's own column and 2
    # eroded cells), while the native path graph lets paths pass 0.0375 m from one (navgrid's passable
    # radius) on a 0.125 m grid; through 0.5 m doors that costs 1-10%.
    rng = np.random.default_rng(0)
    both = np.argwhere(grid.island & on_floor)
    straight, around = [], []
    for _ in range(40):
        start, goal = both[rng.choice(len(both), 2, replace=False)]
        native = grid.distance_field(*goal)[tuple(start)]
        ends = habitat_points(centres[tuple(np.stack([start, goal], 1))])
        scanned = navmesh.geodesic_distance(ends[0], ends[1:])
        if native > 2:
            in_sight = native < 1.03 * np.linalg.norm(ends[0] - ends[1])
            (straight if in_sight else around).append((scanned - native) / native)
    print(
        f"geodesic (scanned - native) / native: in line of sight {len(straight)} pairs, max "
        f"{max(map(abs, straight)):.2%}; around walls {len(around)} pairs, median {np.median(around):.2%}, "
        f"max {max(around):.2%}"
    )
    assert len(straight) >= 5 and max(map(abs, straight)) <= 0.02
    assert len(around) >= 5 and min(around) >= -0.01 and max(around) <= 0.12
