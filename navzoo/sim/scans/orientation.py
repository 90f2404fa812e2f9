"""Whether a mesh is inside out (its floors face down), judged by vertical rays cast with Embree.

Seen from inside a room, a floor faces up and a ceiling faces down. A vertical ray through the mesh meets,
going down, a ceiling then the floor below it; when the pair with room for the agent between them faces
the other way (the upper surface up, the lower one down) in most columns, the winding is reversed.
"""

from __future__ import annotations

import math

import numpy as np
import trimesh
from trimesh.ray.ray_pyembree import RayMeshIntersector

SPACING = 0.5  # metres between sample rays
MIN_VOTES = 8  # pairs needed before calling a mesh inside out


def faces_inside_out(vertices: np.ndarray, faces: np.ndarray, agent_height: float, max_slope: float) -> bool:
    """True when most ceiling-over-floor pairs met by vertical rays face the wrong way."""
    normal = np.cross(
        vertices[faces[:, 1]] - vertices[faces[:, 0]], vertices[faces[:, 2]] - vertices[faces[:, 0]]
    )
    length = np.linalg.norm(normal, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        facing_y = np.nan_to_num(normal[:, 1] / length)
    flat = math.cos(math.radians(max_slope))
    low, high = vertices.min(0), vertices.max(0)
    xs = np.arange(low[0] + SPACING / 2, high[0], SPACING)
    zs = np.arange(low[2] + SPACING / 2, high[2], SPACING)
    if len(xs) == 0 or len(zs) == 0:
        return False
    gx, gz = np.meshgrid(xs, zs)
    origins = np.stack([gx.ravel(), np.full(gx.size, high[1] + 1.0), gz.ravel()], 1)
    directions = np.tile([0.0, -1.0, 0.0], (len(origins), 1))
    mesh = trimesh.Trimesh(vertices, faces, process=False, validate=False)
    location, ray, triangle = RayMeshIntersector(mesh).intersects_location(
        origins, directions, multiple_hits=True
    )
    if len(triangle) < 2:
        return False
    order = np.lexsort((-location[:, 1], ray))  # per ray, top down
    triangle, ray, height = triangle[order], ray[order], location[order, 1]
    upper, lower = slice(None, -1), slice(1, None)
    pair = (ray[upper] == ray[lower]) & (height[upper] - height[lower] >= agent_height)
    up_upper, up_lower = facing_y[triangle[upper]], facing_y[triangle[lower]]
    right = int((pair & (up_upper < -flat) & (up_lower > flat)).sum())
    wrong = int((pair & (up_upper > flat) & (up_lower < -flat)).sum())
    return wrong >= MIN_VOTES and wrong > right
