"""The Warp ray caster (the mesh renderer's CUDA backend) against Embree: Warp runs the same kernel on the
CPU, so its depths, faces and barycentric weights are checked here without a GPU. Needs the `cuda` extra
(warp-lang), which the test install does not include; where it is missing the test is skipped."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("warp", reason="the cuda extra: pip install -e '.[cuda]' (warp-lang)")

from navzoo.sim.scans.raycast import MeshRenderer, PinholeCamera, _EmbreeCaster, _WarpCaster
from tests.sim.scans.test_raycast_threads import furnished_room


def test_warp_casts_what_embree_casts():
    mesh = furnished_room()
    vertices, faces = np.asarray(mesh.vertices, np.float32), np.asarray(mesh.faces, np.int32)
    camera = PinholeCamera(24, 32)
    rng = np.random.default_rng(0)
    n = 5
    eyes = np.c_[rng.uniform(-3.5, 3.5, n), np.full(n, 1.25), rng.uniform(-3.5, 3.5, n)]
    yaws = rng.uniform(-math.pi, math.pi, n)
    directions = camera.directions()
    embree = _EmbreeCaster(vertices, faces)
    warp = _WarpCaster(vertices - embree.centre.astype(np.float32), faces, torch.device("cpu"))
    expected = embree.cast(eyes, directions, yaws, surfaces=True)
    got = warp.cast(eyes - embree.centre, directions, yaws, surfaces=True)
    hit = expected.face >= 0
    assert bool(hit.all())  # a closed room: every ray meets a surface
    torch.testing.assert_close(got.z, expected.z, atol=1e-4, rtol=1e-5)
    same_face = got.face == expected.face
    assert same_face.float().mean() > 0.99  # rays through an edge may name either triangle
    torch.testing.assert_close(got.u[same_face], expected.u[same_face], atol=1e-3, rtol=0)
    torch.testing.assert_close(got.v[same_face], expected.v[same_face], atol=1e-3, rtol=0)


def test_a_renderer_with_warp_renders_embree_s_images():
    mesh = furnished_room()
    camera = PinholeCamera(24, 32)
    embree = MeshRenderer.from_trimesh(mesh, camera)
    warp = MeshRenderer.from_trimesh(mesh, camera)
    warp.caster = _WarpCaster(
        np.asarray(mesh.vertices, np.float32), np.asarray(mesh.faces, np.int32), torch.device("cpu")
    )
    positions = np.array([[0.5, 0.0, -1.0], [-2.0, 0.0, 2.5]])
    yaws = np.array([0.3, -2.0])
    expected, got = embree.render(positions, yaws), warp.render(positions, yaws)
    torch.testing.assert_close(got["depth"], expected["depth"], atol=2e-5, rtol=0)
    assert (got["rgb"] == expected["rgb"]).float().mean() > 0.99
