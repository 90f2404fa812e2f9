"""An independent check of the simulator: Intel Embree (through trimesh) ray-casts the exported mesh of a
scene from the same poses as navzoo's renderer, and trimesh's proximity queries measure how far the places
navzoo calls navigable are from walls and furniture.

Needs the `verify` extra (trimesh and embreex), which the core install does not; the test suite and
benchmarks/embree_depth.py use it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from navzoo.sim.navgrid import NavGrid
from navzoo.sim.render import Camera, SceneAtlas, cast
from navzoo.sim.scenes import Scene


def load_mesh(path: str | Path):
    """An exported .glb as one trimesh.Trimesh, ray-cast with Embree."""
    import trimesh

    mesh = trimesh.load(path, force="mesh")
    assert isinstance(mesh, trimesh.Trimesh)  # force="mesh" joins a scene's meshes into one
    if type(mesh.ray).__name__ != "RayMeshIntersector" or "embree" not in type(mesh.ray).__module__:
        raise ImportError("trimesh is not using Embree: reinstall navzoo, whose dependencies include embreex")
    return mesh


def random_poses(scene: Scene, count: int, agent_radius: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` places where the agent can stand ([count, 2], metres) and headings ([count], radians), in
    float32 as the simulator holds them, so that navzoo's renderer and Embree see the very same poses."""
    grid = NavGrid(scene, agent_radius)
    rows, cols = np.nonzero(grid.free)
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(rows), size=count, replace=len(rows) < count)
    jitter = rng.uniform(-0.5, 0.5, size=(count, 2)) * grid.cell_size  # off the cell centres
    positions = grid.cell_centres(rows[pick], cols[pick]) + jitter
    # Rounding only the renderer's copy to float32 would turn its heading by up to 1.2e-7 rad, which a ray
    # grazing a wall magnifies (tests/test_habitat_export.py).
    return positions.astype(np.float32), rng.uniform(-math.pi, math.pi, size=count).astype(np.float32)


def navzoo_depth(
    scene: Scene, positions, headings, size: tuple[int, int], hfov: float, eye_height: float, max_depth: float
) -> np.ndarray:
    """navzoo's metric z-depth [N, H, W] (top row first; inf where nothing is within range)."""
    height, width = size
    max_range = max_depth * math.sqrt(1 + math.tan(math.radians(hfov) / 2) ** 2)  # as BatchSim's camera
    camera = Camera(height, width, hfov, max_range, torch.device("cpu"))
    hits, _ = cast(
        SceneAtlas.of_scene(scene),
        camera,
        torch.zeros(len(positions), dtype=torch.long),
        torch.as_tensor(positions, dtype=torch.float32),
        torch.as_tensor(headings, dtype=torch.float32),
        eye_height,
        False,
    )
    return hits.z.permute(0, 2, 1).flip(1).numpy()


def embree_depth(
    mesh, positions, headings, size: tuple[int, int], hfov: float, eye_height: float
) -> np.ndarray:
    """Embree's metric z-depth [N, H, W] of the same pinhole cameras (inf where a ray hits nothing)."""
    height, width = size
    focal = (width / 2) / math.tan(math.radians(hfov) / 2)
    right = (np.arange(width) + 0.5 - width / 2) / focal  # tan of each column, right positive
    up = (height / 2 - np.arange(height) - 0.5) / focal  # tan of each row, top row first
    positions, headings = np.asarray(positions, np.float64), np.asarray(headings, np.float64)
    # navzoo frame (x, y, h): forward (cos, sin, 0), right (sin, -cos, 0); rays with unit forward part.
    forward = np.stack([np.cos(headings), np.sin(headings), np.zeros_like(headings)], -1)
    rightward = np.stack([np.sin(headings), -np.cos(headings), np.zeros_like(headings)], -1)
    directions = (
        forward[:, None, None]
        + right[None, None, :, None] * rightward[:, None, None]
        + up[None, :, None, None] * np.array([0.0, 0.0, 1.0])
    )  # [N, H, W, 3]
    origins = np.concatenate([positions, np.full((len(positions), 1), eye_height)], 1)
    habitat = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], dtype=np.float64)  # (x, y, h) -> (x, h, -y)
    ray_origins = np.broadcast_to(origins[:, None, None], directions.shape).reshape(-1, 3) @ habitat.T
    ray_directions = directions.reshape(-1, 3) @ habitat.T
    locations, ray_index, _ = mesh.ray.intersects_location(ray_origins, ray_directions, multiple_hits=False)
    depth = np.full(len(ray_origins), np.inf)
    # z-depth is the distance along the optical axis: the hit's offset over the ray's unit forward part.
    offset = locations - ray_origins[ray_index]
    scale = np.linalg.norm(ray_directions[ray_index], axis=1)
    depth[ray_index] = np.linalg.norm(offset, axis=1) / scale
    return depth.reshape(directions.shape[:3])


def obstacle_clearance(mesh, positions, probe_height: float = 0.01) -> np.ndarray:
    """Horizontal distance [N] from each floor point (x, y) to the nearest wall or furniture face of the
    mesh, measured just above the floor among the mesh's vertical faces."""
    import trimesh

    vertical = np.abs(mesh.face_normals[:, 1]) < 1e-6
    walls = trimesh.Trimesh(mesh.vertices, mesh.faces[vertical], process=False)
    positions = np.asarray(positions, np.float64)
    points = np.stack([positions[:, 0], np.full(len(positions), probe_height), -positions[:, 1]], 1)
    _, distance, _ = trimesh.proximity.closest_point(walls, points)
    return distance
