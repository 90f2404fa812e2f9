"""Depth and RGB rendering against analytic values and a brute-force 3D ray march."""

import math

import numpy as np
import pytest
import torch

from navzoo.names import SCENE_FAMILIES
from navzoo.sim import BatchSim, SimConfig, render
from navzoo.sim.physics import move
from navzoo.sim.scenes import generate_scene
from tests.support import CEILING, EYE, box_room, render_depth


def brute_force_depth(heights, pos, heading, size, ceiling=CEILING, hfov=90.0, step=0.0005, max_range=12.0):
    """Reference: march every pixel's 3D ray in 0.5 mm steps until it is inside a box, floor or ceiling."""
    focal = (size / 2) / math.tan(math.radians(hfov) / 2)
    centre = (np.arange(size) + 0.5 - size / 2) / focal
    right, up = np.meshgrid(centre, -centre)  # [H, W], top row first
    forward = np.array([math.cos(heading), math.sin(heading)])
    rightward = np.array([math.sin(heading), -math.cos(heading)])
    directions = forward[None, None] + right[..., None] * rightward[None, None]  # horizontal part, z = 1
    depth = np.full((size, size), np.inf)
    for z in np.arange(step, max_range, step):
        xy = np.asarray(pos) + directions * z
        height = EYE + up * z
        r = np.floor(xy[..., 1] / 0.25).astype(int).clip(0, heights.shape[0] - 1)
        c = np.floor(xy[..., 0] / 0.25).astype(int).clip(0, heights.shape[1] - 1)
        inside = (height <= heights[r, c]) | (height <= 0) | (height >= ceiling)
        depth = np.where(np.isinf(depth) & inside, z, depth)
        if np.isfinite(depth).all():
            break
    return depth


def test_wall_at_known_distance_has_constant_z_depth(room):
    depth = render_depth(room, (2.0, 2.0), 0.0, size=8)
    # The wall's inner face is at x = 3.75 m: 1.75 m in front of the camera for every pixel that sees it.
    assert np.allclose(depth[1:-1], 1.75, atol=1e-5)


def test_floor_and_ceiling_rows_match_pinhole_geometry(room):
    size = 32
    depth = render_depth(room, (2.0, 2.0), 0.0, size=size)
    focal = size / 2  # hfov 90
    for row in (size - 1, size - 2):  # bottom rows see the floor 1.25 m below the eye
        expected = EYE * focal / (row + 0.5 - size / 2)
        assert np.allclose(depth[row], expected, atol=1e-5)
    expected_top = (CEILING - EYE) * focal / (size / 2 - 0.5)
    assert np.allclose(depth[0], expected_top, atol=1e-5)


def test_low_box_shows_face_top_and_wall_behind():
    heights = box_room()
    heights[7:9, 12:14] = 0.5  # box 0.5 m high, near face at x = 3.0 m, top ends at x = 3.5 m
    size = 64
    depth = render_depth(heights, (2.0, 2.0), 0.0, size=size)
    reference = brute_force_depth(heights, (2.0, 2.0), 0.0, size)
    # A handful of rays meet the box's top edge exactly where they leave its side: either answer is right.
    close = np.abs(depth - reference) < 2e-3
    assert close.mean() > 0.995
    centre = depth[:, size // 2]
    assert np.isclose(centre, 1.0, atol=1e-4).any(), "the box's near face at 1 m"
    assert np.isclose(centre, 1.75, atol=1e-4).any(), "the wall behind the box"
    assert ((centre > 1.0 + 1e-3) & (centre < 1.5)).any(), "the box's top between 1 m and 1.5 m"


@pytest.mark.parametrize("scene_id", ["apartment/val/00000", "office/test/00001"])
def test_generated_scene_matches_brute_force_ray_march(scene_id):
    scene = generate_scene(scene_id)
    rows, cols = np.nonzero(scene.heights == 0)
    rng = np.random.default_rng(0)
    for k in rng.integers(len(rows), size=3):
        pos = ((cols[k] + 0.5) * 0.25, (rows[k] + 0.5) * 0.25)
        heading = float(rng.uniform(-math.pi, math.pi))
        ours = render_depth(scene.heights, pos, heading, 16, ceiling=scene.ceiling_height)
        reference = brute_force_depth(scene.heights, pos, heading, 16, ceiling=scene.ceiling_height)
        # Pixels whose ray grazes a box edge may land either side of it; all others agree to the step size.
        close = np.abs(ours - reference) < 2e-3
        assert close.mean() > 0.97, np.abs(ours - reference).max()


def test_depth_observation_is_normalised_and_clipped():
    sim = BatchSim(SimConfig(num_envs=4, resolution=(32, 32), max_depth=2.0))
    depth = sim.reset()["depth"]
    assert depth.shape == (4, 32, 32, 1) and depth.dtype == torch.float32
    assert float(depth.min()) >= 0.0 and float(depth.max()) <= 1.0
    assert (depth == 1.0).any(), "surfaces beyond max_depth read as 1"


def test_rgb_differs_between_surfaces_and_rooms():
    sim = BatchSim(SimConfig(num_envs=16, resolution=(32, 32), sensors=("rgb",), seed=1))
    rgb = sim.reset()["rgb"]
    assert rgb.shape == (16, 32, 32, 3) and rgb.dtype == torch.uint8
    colours = {tuple(c) for c in rgb.reshape(-1, 3).tolist()}
    assert len(colours) > 50, "floors, walls and furniture have different colours and textures"
    # the same pose renders the same picture; a different room renders a different one
    assert not torch.equal(rgb[0], rgb[1])


def test_thirty_six_left_turns_return_the_start_pose():
    sim = BatchSim(SimConfig(num_envs=2, resolution=(16, 16)))
    first = sim.reset()["depth"].clone()
    pos, heading = sim.pos.clone(), sim.heading.clone()
    for _ in range(36):
        obs, _, done, _ = sim.step(torch.full((2,), 2))
    assert not done.any()
    assert torch.allclose(sim.pos, pos)
    assert torch.allclose(torch.cos(sim.heading), torch.cos(heading), atol=1e-5)
    assert torch.allclose(torch.sin(sim.heading), torch.sin(heading), atol=1e-5)
    assert torch.allclose(obs["depth"], first, atol=1e-4)


def _random_poses(family: str, count: int, seed: int, resolution: int) -> BatchSim:
    """A simulator whose environments stand at `count` random poses: episode starts (navigation cell
    centres), all but the first 50 then slid up to 0.6 m in a random direction (off the centres, some against
    a wall, as walks leave them), facing random headings."""
    config = SimConfig(
        num_envs=count,
        resolution=(resolution, resolution),
        sensors=("depth", "rgb"),
        scene_families=(family,),
        seed=seed,
    )
    sim = BatchSim(config)
    sim.reset()
    generator = torch.Generator().manual_seed(seed)
    angle = torch.rand(count, generator=generator) * 2 * math.pi
    length = torch.rand(count, generator=generator) * 0.6
    length[:50] = 0
    slide = torch.stack([torch.cos(angle), torch.sin(angle)], 1) * length[:, None]
    sim.pos = move(
        sim.pool.atlas.heights, sim.pool.cell_size, sim.slot, sim.pos, slide, sim.config.agent_radius
    )[0]
    sim.heading = (torch.rand(count, generator=generator) * 2 - 1) * math.pi
    return sim


def _images(sim: BatchSim, sensors: tuple[str, ...], **kernels) -> dict[str, torch.Tensor]:
    return render.observe(
        sim.pool.atlas,
        sim.camera,
        sim.pool.materials,
        sim.slot,
        sim.pos,
        sim.heading,
        sim.config.sensor_height,
        (sim.config.min_depth, sim.config.max_depth),
        sensors,
        **kernels,
    )


@pytest.mark.parametrize("resolution", [32, 64])
@pytest.mark.parametrize("family", SCENE_FAMILIES)
def test_every_render_path_gives_the_same_images(family, resolution):
    """The numba kernel (the CPU default) walks each ray to its first wall; the tensor kernels walk every ray
    a fixed number of crossings, eager or through torch.compile. Same float32 arithmetic, so the same depth
    and RGB, bit for bit, on 300 poses per family, with and without RGB (which the kernels resolve apart).

    The compiled kernels match exactly on the CPU because inductor builds its C++ with -ffp-contract=off
    (torch._inductor.config.cpp, no fused multiply-adds) and keeps eager's order of operations. They compile
    once per process (render._COMPILED; about 20 s, with and without RGB), and every case here reuses them."""
    sim = _random_poses(family, 300, seed=5, resolution=resolution)
    for sensors in (("depth", "rgb"), ("depth",)):
        reference = _images(sim, sensors, tensor_kernels=True)
        for kernels in ({}, {"tensor_kernels": True, "compiled": True}):
            images = _images(sim, sensors, **kernels)
            for name, image in reference.items():
                differ = images[name] != image
                assert not differ.any(), f"{name} of {sensors}, {kernels}: {int(differ.sum())} values differ"
