"""navzoo.sim.scans.raycast: analytic scenes with known depth and colours, batching, and navzoo's own
renderer against the mesh it exports of a scene."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

trimesh = pytest.importorskip("trimesh", reason="the verify extra (trimesh, embreex)")
pytest.importorskip("embreex", reason="the verify extra (trimesh, embreex)")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from navzoo.sim.scans.raycast import MeshRenderer, PinholeCamera  # noqa: E402
from navzoo.sim.scans.surfaces import TextureWarning  # noqa: E402

EYE, MAX_DEPTH = 1.25, 10.0


def quad(corner, right, up) -> trimesh.Trimesh:
    """A rectangle from `corner` along `right` and `up` (metres), facing right x up, with UVs that run
    from (0, 0) at the corner to (1, 1) at the far corner."""
    corner, right, up = (np.asarray(a, np.float64) for a in (corner, right, up))
    vertices = np.stack([corner, corner + right, corner + right + up, corner + up])
    mesh = trimesh.Trimesh(vertices, [[0, 1, 2], [0, 2, 3]], process=False)
    mesh.visual = trimesh.visual.TextureVisuals(uv=[[0, 0], [1, 0], [1, 1], [0, 1]])
    return mesh


def floor(size: float = 200.0) -> trimesh.Trimesh:
    return quad((-size, 0, size), (2 * size, 0, 0), (0, 0, -2 * size))


def wall_facing_camera(distance: float, half: float = 20.0) -> trimesh.Trimesh:
    """A wall across the view of a camera at the origin looking down -Z, `distance` ahead."""
    return quad((-half, EYE - half, -distance), (2 * half, 0, 0), (0, 2 * half, 0))


def render(meshes, size=(32, 32), yaws=(0.0,), positions=None, sensors=("depth", "rgb")) -> dict:
    renderer = MeshRenderer.from_trimesh(meshes, PinholeCamera(*size, max_depth=MAX_DEPTH))
    positions = np.zeros((len(yaws), 3)) if positions is None else positions
    return {k: v.numpy() for k, v in renderer.render(positions, np.asarray(yaws), sensors).items()}


def row_slopes(height: int, width: int, hfov: float = 90.0) -> np.ndarray:
    """tan of each image row's elevation, top row first."""
    focal = (width / 2) / math.tan(math.radians(hfov) / 2)
    return (height / 2 - np.arange(height) - 0.5) / focal


def column_tans(width: int, hfov: float = 90.0) -> np.ndarray:
    focal = (width / 2) / math.tan(math.radians(hfov) / 2)
    return (np.arange(width) + 0.5 - width / 2) / focal


def test_wall_ahead_has_one_z_depth_at_every_pixel_and_shapes_are_batch_sims():
    out = render([wall_facing_camera(3.0)], size=(24, 32))
    assert out["depth"].shape == (1, 24, 32, 1) and out["depth"].dtype == np.float32
    assert out["rgb"].shape == (1, 24, 32, 3) and out["rgb"].dtype == np.uint8
    assert np.abs(out["depth"] * MAX_DEPTH - 3.0).max() < 1e-4  # z-depth, not ray length


@pytest.mark.parametrize("yaw", [0.0, math.pi / 2, math.pi, -math.pi / 2, 0.3])
def test_yaw_turns_left_from_minus_z(yaw):
    """habitat's forward at yaw a is (-sin a, 0, -cos a): a wall put there fills the view at its distance."""
    forward = np.array([-math.sin(yaw), 0.0, -math.cos(yaw)])
    right = np.array([math.cos(yaw), 0.0, -math.sin(yaw)])
    centre = np.array([1.0, 0.0, -2.0]) + 2.5 * forward + np.array([0, EYE, 0])
    wall = quad(centre - 20 * right - [0, 20, 0], 40 * right, (0, 40, 0))
    wall.visual = trimesh.visual.ColorVisuals(wall, face_colors=[200, 30, 60, 255])
    out = render([wall], yaws=(yaw,), positions=np.array([[1.0, 0.0, -2.0]]))
    assert np.abs(out["depth"] * MAX_DEPTH - 2.5).max() < 1e-4
    assert (out["rgb"] == [200, 30, 60]).all()


def test_floor_depth_per_row_and_misses_above_the_horizon():
    height = width = 32
    depth = render([floor()], size=(height, width))["depth"][0, ..., 0]
    slope = row_slopes(height, width)
    below = slope < 0
    z = EYE / -slope[below]  # where each row's rays meet the floor, the same in every column
    expected = np.minimum(z, MAX_DEPTH) / MAX_DEPTH
    assert np.abs(depth[below] - expected[:, None]).max() * MAX_DEPTH < 1e-4
    assert (depth[~below] == 0).all()  # nothing before the far plane reads 0, as habitat's depth does
    assert (z > MAX_DEPTH).any() and (z < MAX_DEPTH).any()  # both clipped and unclipped rows


def test_table_top_overhang_shows_the_floor_beneath_and_the_slab_at_its_distance():
    """A slab 0.92 .. 0.97 m high from 2 to 3 m ahead over the floor. A ray of downward slope s is at height
    1.25 - s z: it meets the slab's front face, its top, or passes under the front edge to the floor."""
    top, bottom, near, far = 0.97, 0.92, 2.0, 3.0
    slab = trimesh.creation.box(
        (20.0, top - bottom, far - near),
        trimesh.transformations.translation_matrix((0, (top + bottom) / 2, -(near + far) / 2)),
    )
    size = (64, 64)
    depth = render([floor(), slab], size=size, sensors=("depth",))["depth"][0, ..., 0] * MAX_DEPTH
    slope = -row_slopes(*size)
    expected, kinds = np.zeros(size[0]), []
    for row, s in enumerate(slope):
        at_front = EYE - s * near
        if s <= 0:
            z, kind = 0.0, "miss"
        elif bottom <= at_front <= top:
            z, kind = near, "front"
        elif at_front > top and near <= (EYE - top) / s <= far:
            z, kind = (EYE - top) / s, "top"
        else:
            z, kind = min(EYE / s, MAX_DEPTH), "under" if near <= EYE / s <= far else "floor"
        expected[row] = z
        kinds.append(kind)
    assert {"front", "top", "under", "floor", "miss"} <= set(kinds)
    assert np.abs(depth - expected[:, None]).max() < 1e-4


def test_vertex_colours_are_interpolated_across_the_face():
    size = (16, 16)
    wall = wall_facing_camera(2.0, half=5.0)
    red, blue = np.array([255, 0, 0]), np.array([0, 0, 255])
    left = wall.vertices[:, 0] < 0
    colors = np.where(left[:, None], red, blue)
    wall.visual = trimesh.visual.ColorVisuals(wall, vertex_colors=np.c_[colors, np.full(4, 255)])
    rgb = render([wall], size=size)["rgb"][0].astype(float)
    x = 2.0 * column_tans(size[1])  # where each column meets the wall
    expected = red + (x[:, None] + 5) / 10 * (blue - red)  # linear in x, whatever the triangulation
    assert np.abs(rgb - expected[None]).max() <= 1.0


def quadrant_texture() -> tuple[Image.Image, dict]:
    """8x8 texels: a colour per 4x4 quadrant, image row 0 at the top."""
    colors = {"top left": (255, 0, 0), "top right": (0, 255, 0), "bottom left": (0, 0, 255)}
    colors["bottom right"] = (255, 255, 255)
    pixels = np.zeros((8, 8, 3), np.uint8)
    pixels[:4, :4], pixels[:4, 4:] = colors["top left"], colors["top right"]
    pixels[4:, :4], pixels[4:, 4:] = colors["bottom left"], colors["bottom right"]
    return Image.fromarray(pixels), colors


def test_texture_is_sampled_at_the_hits_uv():
    image, colors = quadrant_texture()
    wall = wall_facing_camera(2.0, half=2.0)  # exactly fills the 90 degree view, uv (0, 0) bottom left
    wall.visual = trimesh.visual.TextureVisuals(uv=wall.visual.uv, image=image)
    rgb = render([wall], size=(16, 16))["rgb"][0]
    # Pixels well inside each quadrant, away from the half-texel blends at its edges.
    inner, outer = slice(2, 6), slice(10, 14)
    assert (rgb[inner, inner] == colors["top left"]).all()
    assert (rgb[inner, outer] == colors["top right"]).all()
    assert (rgb[outer, inner] == colors["bottom left"]).all()
    assert (rgb[outer, outer] == colors["bottom right"]).all()


def test_undecodable_texture_warns_once_and_falls_back_to_the_base_colour():
    noise = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format="PNG")
    broken = Image.open(io.BytesIO(buffer.getvalue()[: len(buffer.getvalue()) // 2]))  # header only
    material = trimesh.visual.material.PBRMaterial(baseColorFactor=[255, 0, 0, 255], baseColorTexture=broken)
    walls = [wall_facing_camera(2.0), wall_facing_camera(30.0)]
    for wall in walls:
        wall.visual = trimesh.visual.TextureVisuals(uv=wall.visual.uv, material=material)
    with pytest.warns(TextureWarning) as caught:
        out = render(walls)
    assert len(caught) == 1
    assert np.abs(out["depth"] * MAX_DEPTH - 2.0).max() < 1e-4
    assert (out["rgb"] == [255, 0, 0]).all()


def test_many_poses_in_one_call_equal_one_by_one():
    slab = trimesh.creation.box((1.0, 0.05, 1.0), trimesh.transformations.translation_matrix((1, 0.95, -1)))
    room = trimesh.creation.box((8.0, 3.0, 8.0), trimesh.transformations.translation_matrix((0, 1.5, 0)))
    room.invert()  # faces inward, as a scan's walls
    meshes = [room, slab]
    rng = np.random.default_rng(0)
    count = 64
    positions = np.c_[rng.uniform(-3, 3, count), np.zeros(count), rng.uniform(-3, 3, count)]
    yaws = rng.uniform(-math.pi, math.pi, count)
    renderer = MeshRenderer.from_trimesh(meshes, PinholeCamera(12, 16))
    together = renderer.render(positions, torch.as_tensor(yaws))
    for k in range(count):
        alone = renderer.render(positions[k : k + 1], yaws[k : k + 1])
        for sensor in ("depth", "rgb"):
            assert torch.equal(together[sensor][k : k + 1], alone[sensor])
    assert (together["depth"] > 0).all()  # a closed room: every ray hits something


def test_navzoos_renderer_and_the_mesh_it_exports_agree(tmp_path):
    """BatchSim's depth against this renderer on the scene's exported .glb from the same poses. navzoo's
    floor point (x, y) with heading h is habitat's (x, 0, -y) with yaw h - pi/2 (navzoo.sim.mesh)."""
    from navzoo.interop.habitat_scenes import SCENES_FOLDER, export_scenes
    from navzoo.interop.mesh_reference import random_poses
    from navzoo.sim.batch_sim import BatchSim
    from navzoo.sim.config import SimConfig
    from navzoo.sim.episodes import episodes_for
    from navzoo.sim.scenes import generate_scene

    sid, count = "apartment/val/00000", 48
    config = SimConfig(split="val", scene_families=("apartment",), num_envs=count, resolution=(64, 64))
    sim = BatchSim(config, episodes=[e for e in episodes_for(config) or [] if e.scene_id == sid])
    sim.reset()
    positions, headings = random_poses(generate_scene(sid), count, config.agent_radius, seed=0)
    sim.pos, sim.heading = torch.from_numpy(positions), torch.from_numpy(headings)
    ours = sim.observe()["depth"].numpy()

    export_scenes(tmp_path, "val", ("apartment",), count=1)
    camera = PinholeCamera(
        *config.resolution, config.hfov, config.sensor_height, config.min_depth, config.max_depth
    )
    renderer = MeshRenderer.from_trimesh(trimesh.load(tmp_path / SCENES_FOLDER / f"{sid}.glb"), camera)
    floor_points = np.c_[positions[:, 0], np.zeros(count), -positions[:, 1]]
    theirs = renderer.render(floor_points, headings.astype(np.float64) - math.pi / 2, ("depth",))["depth"]
    error = np.abs(ours - theirs.numpy()) * (config.max_depth - config.min_depth)
    within = float((error < 0.01).mean())
    print(f"depth within 1 cm on {within:.4%} of {error.size} pixels; median error {np.median(error):.2e} m")
    assert within >= 0.99
