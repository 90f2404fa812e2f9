"""The mesh renderer splits its cameras over torch's threads: the images are the same bit for bit as with
one thread, whatever the number of cameras per thread."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

trimesh = pytest.importorskip("trimesh", reason="trimesh and embreex (base dependencies)")
pytest.importorskip("embreex", reason="trimesh and embreex (base dependencies)")

from navzoo.sim.scans.raycast import MeshRenderer, PinholeCamera  # noqa: E402


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def furnished_room() -> trimesh.Trimesh:
    rng = np.random.default_rng(0)
    parts = [trimesh.creation.box((8.0, 3.0, 8.0), trimesh.transformations.translation_matrix((0, 1.5, 0)))]
    parts[0].invert()
    for _ in range(10):
        size = rng.uniform(0.3, 1.2, 3)
        centre = (rng.uniform(-3.5, 3.5), size[1] / 2, rng.uniform(-3.5, 3.5))
        box = trimesh.creation.box(size, trimesh.transformations.translation_matrix(centre))
        box.visual.face_colors = rng.integers(0, 256, 3)
        parts.append(box)
    return trimesh.util.concatenate(parts)


@pytest.mark.parametrize("cameras", [1, 3, 7])
def test_images_with_two_threads_equal_those_with_one(threads, cameras):
    renderer = MeshRenderer.from_trimesh(furnished_room(), PinholeCamera(24, 32))
    rng = np.random.default_rng(cameras)
    positions = np.c_[rng.uniform(-3.5, 3.5, cameras), np.zeros(cameras), rng.uniform(-3.5, 3.5, cameras)]
    yaws = rng.uniform(-math.pi, math.pi, cameras)
    images = {}
    for count in (1, 2):
        threads(count)
        for sensors in (("depth",), ("depth", "rgb")):
            images[count, sensors] = renderer.render(positions, yaws, sensors)
    for sensors in (("depth",), ("depth", "rgb")):
        one, two = images[1, sensors], images[2, sensors]
        assert one.keys() == two.keys() == set(sensors)
        for name in sensors:
            assert one[name].shape[0] == cameras
            assert torch.equal(one[name], two[name]), name
    assert (images[1, ("depth",)]["depth"] > 0).all()  # the room is closed: every ray meets a surface


def test_no_cameras_render_empty_images(threads):
    threads(2)
    images = MeshRenderer.from_trimesh(furnished_room(), PinholeCamera(24, 32)).render(
        np.zeros((0, 3)), np.zeros(0)
    )
    assert images["depth"].shape == (0, 24, 32, 1) and images["rgb"].shape == (0, 24, 32, 3)
