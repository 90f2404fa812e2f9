"""Depth and RGB cameras of a triangle mesh (a scanned scene in habitat's y-up frame), N agents in one call.

Cameras follow habitat's sensors (docs/design/habitat-sim-rules.md §3): a pinhole `sensor_height` above the
agent's floor position, square pixels with fx = fy = (W/2)/tan(hfov/2), looking down -Z at yaw 0, yaw
turning left (§2/§5). Depth is eye-space z (along the optical axis, not the ray's length), clipped to
[min_depth, max_depth] and normalised to [0, 1]; a ray that meets nothing before habitat's far plane
(1000 m) reads 0, as habitat's unprojected far plane does. RGB is the surface colour without lighting:
a face's base colour, its vertices' colours interpolated, or its texture sampled bilinearly at the
interpolated UV. Misses are black. Layouts are BatchSim's: depth [N, H, W, 1] float32, rgb [N, H, W, 3]
uint8, row 0 at the top.

Every camera ray has a forward component of exactly 1, so the distance a ray caster reports along it is the
z-depth itself. The pixel grid's directions are computed once per camera; a pose only rotates them.

Backends:
- CPU: Intel Embree through `embreex`, one scene built per mesh. The N cameras are split into as many
  contiguous groups as torch has threads (`torch.set_num_threads`, as for the grid renderer), each cast by
  one `run` call on a thread of its own: embreex releases the GIL while it casts.
- CUDA: NVIDIA Warp (`warp-lang` >= 1.0, the `cuda` extra) when the device is CUDA and `warp` imports: a
  `wp.Mesh` and one kernel launch with `wp.mesh_query_ray` per pixel. Warp runs the same kernel on the CPU,
  where tests/sim/scans/test_raycast_warp.py checks it against Embree (where warp is installed); it has not
  run on a CUDA device yet.
Habitat's near plane (0.01 m) is not modelled: a surface closer than that is drawn, not clipped.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from navzoo.sim.scans.surfaces import Surfaces, mesh_surfaces

if TYPE_CHECKING:
    import trimesh

FAR_PLANE = 1000.0  # metres of z-depth: habitat's camera far plane; nothing hit before it is a miss
MISS = -1  # the face index of a ray that hit nothing
SENSORS = ("depth", "rgb")


@dataclass(frozen=True)
class PinholeCamera:
    """habitat's depth/RGB camera: resolution (H, W), horizontal field of view (degrees), height above the
    agent's floor position and depth range, all in metres. Defaults are habitat's."""

    height: int
    width: int
    hfov: float = 90.0
    sensor_height: float = 1.25
    min_depth: float = 0.0
    max_depth: float = 10.0

    def directions(self) -> np.ndarray:
        """[H*W, 3] float32 camera-frame ray directions (x right, y up, -z forward), row-major from the top
        row, each with forward component 1 so that a hit's distance along it is its z-depth."""
        focal = (self.width / 2) / math.tan(math.radians(self.hfov) / 2)
        right = (np.arange(self.width) + 0.5 - self.width / 2) / focal
        up = (self.height / 2 - np.arange(self.height) - 0.5) / focal
        x, y = np.meshgrid(right, up)
        return np.stack([x, y, -np.ones_like(x)], -1).reshape(-1, 3).astype(np.float32)


@dataclass
class Hits:
    """What the rays of N cameras met, flattened [N*H*W]: z-depth (metres), face (MISS: nothing) and the
    hit's barycentric weights of the face's second and third vertices (Embree's u, v)."""

    z: torch.Tensor
    face: torch.Tensor
    u: torch.Tensor
    v: torch.Tensor


# --- ray casters -----------------------------------------------------------------------------------------


class _EmbreeCaster:
    """One Embree scene of the mesh, cast on the CPU. Coordinates are taken relative to the mesh's centre,
    which keeps float32 rounding small in scans placed far from the origin."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray):
        from embreex.mesh_construction import TriangleMesh
        from embreex.rtcore_scene import EmbreeScene

        self.centre = (vertices.min(0).astype(np.float64) + vertices.max(0)) / 2
        self.scene = EmbreeScene()
        centred = (vertices - self.centre).astype(np.float32)
        TriangleMesh(self.scene, centred, np.ascontiguousarray(faces, np.int32))

    def cast(self, eyes: np.ndarray, camera_directions: np.ndarray, yaws: np.ndarray, surfaces: bool) -> Hits:
        groups = np.array_split(np.arange(len(yaws)), max(1, min(torch.get_num_threads(), len(yaws))))
        eyes = eyes - self.centre
        if len(groups) == 1:
            parts = [self._cast(eyes, camera_directions, yaws, surfaces)]
        else:
            pool = _CastThreads.at_least(len(groups))
            parts = list(
                pool.map(lambda g: self._cast(eyes[g], camera_directions, yaws[g], surfaces), groups)
            )
        return Hits(*(torch.from_numpy(np.concatenate(column)) for column in zip(*parts, strict=True)))

    def _cast(self, eyes: np.ndarray, camera_directions: np.ndarray, yaws: np.ndarray, surfaces: bool):
        """(z, face, u, v) numpy arrays of the rays of the cameras at `eyes` (relative to the centre)."""
        directions = _rotate(camera_directions, yaws).reshape(-1, 3)
        origins = np.repeat(eyes.astype(np.float32), len(camera_directions), axis=0)
        if not surfaces:  # distances alone: a miss reports FAR_PLANE itself
            z = self.scene.run(origins, directions, dists=FAR_PLANE, query="DISTANCE")
            face = np.where(z < FAR_PLANE, 0, MISS).astype(np.int32)
            zero = np.zeros(0, np.float32)
            return z, face, zero, zero
        hit = self.scene.run(origins, directions, dists=FAR_PLANE, output=1)
        return tuple(hit[k] for k in ("tfar", "primID", "u", "v"))


class _CastThreads:
    """The one thread pool every mesh's caster casts on, grown to the most threads asked for; its threads
    wait idle between calls and end with the process."""

    pool: ThreadPoolExecutor | None = None
    size = 0

    @classmethod
    def at_least(cls, count: int) -> ThreadPoolExecutor:
        if cls.pool is None or cls.size < count:
            if cls.pool is not None:
                cls.pool.shutdown(wait=False)
            cls.pool, cls.size = ThreadPoolExecutor(count, thread_name_prefix="embree"), count
        return cls.pool


def _rotate(directions: np.ndarray, yaws: np.ndarray) -> np.ndarray:
    """[N, P, 3] float32: camera-frame directions [P, 3] turned by each yaw about +Y (left positive)."""
    cos, sin = np.cos(yaws)[:, None], np.sin(yaws)[:, None]
    x, y, z = directions[:, 0], directions[:, 1], directions[:, 2]
    out = np.empty((len(yaws), len(directions), 3), np.float32)
    out[..., 0] = cos * x + sin * z
    out[..., 1] = y
    out[..., 2] = cos * z - sin * x
    return out


def _warp_available() -> bool:
    try:
        import warp  # noqa: F401  # pyright: ignore[reportMissingImports]
    except ImportError:
        return False
    return True


class _WarpCaster:
    """One `wp.Mesh` of the mesh, cast by one kernel launch. The renderer uses it on CUDA devices; Warp runs
    the same kernel on the CPU too, which is how the tests check it against Embree."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, device: torch.device):
        import warp as wp  # pyright: ignore[reportMissingImports]

        from navzoo.sim.scans.warp_kernel import warp_cast_kernel

        wp.init()
        self.wp = wp
        self.device = device
        self.wp_device = "cpu" if device.type == "cpu" else f"cuda:{device.index or 0}"
        self.points = wp.array(vertices.astype(np.float32), dtype=wp.vec3, device=self.wp_device)
        self.indices = wp.array(faces.astype(np.int32).ravel(), dtype=wp.int32, device=self.wp_device)
        self.mesh = wp.Mesh(points=self.points, indices=self.indices)
        self.kernel = warp_cast_kernel()

    def cast(self, eyes: np.ndarray, camera_directions: np.ndarray, yaws: np.ndarray, surfaces: bool) -> Hits:
        wp, dev = self.wp, self.device
        n, p = len(yaws), len(camera_directions)
        eyes_t = torch.as_tensor(eyes, dtype=torch.float32, device=dev).contiguous()
        yaws_t = torch.as_tensor(yaws, dtype=torch.float32, device=dev).contiguous()
        directions_t = torch.as_tensor(camera_directions, device=dev).contiguous()
        z = torch.empty(n * p, dtype=torch.float32, device=dev)
        face = torch.empty(n * p, dtype=torch.int32, device=dev)
        u, v = torch.empty_like(z), torch.empty_like(z)
        wp.launch(
            self.kernel,
            dim=(n, p),
            inputs=[
                self.mesh.id,
                wp.from_torch(eyes_t, dtype=wp.vec3),
                wp.from_torch(yaws_t),
                wp.from_torch(directions_t, dtype=wp.vec3),
                FAR_PLANE,
            ],
            outputs=[wp.from_torch(z), wp.from_torch(face), wp.from_torch(u), wp.from_torch(v)],
            device=self.wp_device,
        )
        return Hits(z, face, u, v)


# --- the renderer ----------------------------------------------------------------------------------------


class MeshRenderer:
    """Renders one mesh from N agent poses per call. Build it once per mesh (and camera): that builds the
    ray caster's acceleration structure and the camera's ray directions."""

    def __init__(
        self,
        vertices: np.ndarray,
        faces: np.ndarray,
        camera: PinholeCamera,
        surfaces: Surfaces | None = None,
        device: str | torch.device = "cpu",
    ):
        vertices, faces = np.asarray(vertices, np.float32), np.asarray(faces, np.int32)
        self.camera = camera
        self.device = torch.device(device)
        self.faces = faces
        self.surfaces = surfaces if surfaces is not None else Surfaces.uniform(len(vertices), len(faces))
        self.directions = camera.directions()
        if self.device.type == "cuda" and _warp_available():
            self.caster: _EmbreeCaster | _WarpCaster = _WarpCaster(vertices, faces, self.device)
        else:
            self.caster = _EmbreeCaster(vertices, faces)
        self._colors = _ColorTables(self.faces, self.surfaces, self.device)

    @classmethod
    def from_trimesh(
        cls,
        mesh: trimesh.Trimesh | trimesh.Scene | list[trimesh.Trimesh],
        camera: PinholeCamera,
        device: str | torch.device = "cpu",
    ) -> MeshRenderer:
        """A renderer of trimesh meshes, already in habitat's frame, with the colours of their `visual`."""
        vertices, faces, surfaces = mesh_surfaces(mesh)
        return cls(vertices, faces, camera, surfaces, device)

    def render(self, positions, yaws, sensors: tuple[str, ...] = SENSORS) -> dict[str, torch.Tensor]:
        """The cameras of agents standing at `positions` [N, 3] (habitat's frame, on the floor) with `yaws`
        [N] (radians, left positive, 0: looking down -Z): "depth" [N, H, W, 1] float32 and/or "rgb"
        [N, H, W, 3] uint8, on this renderer's device."""
        unknown = set(sensors) - set(SENSORS)
        if unknown:
            raise ValueError(f"unknown sensors {sorted(unknown)}: choose from {SENSORS}")
        positions = _numpy(positions, np.float64).reshape(-1, 3)
        yaws = _numpy(yaws, np.float64).reshape(-1)
        eyes = positions + np.array([0.0, self.camera.sensor_height, 0.0])
        hits = self.caster.cast(eyes, self.directions, yaws, surfaces="rgb" in sensors)
        n, h, w = len(yaws), self.camera.height, self.camera.width
        observations = {}
        if "depth" in sensors:
            observations["depth"] = self._depth(hits).reshape(n, h, w, 1).to(self.device)
        if "rgb" in sensors:
            observations["rgb"] = self._colors.shade(hits).reshape(n, h, w, 3).to(self.device)
        return observations

    def _depth(self, hits: Hits) -> torch.Tensor:
        low, high = self.camera.min_depth, self.camera.max_depth
        depth = (hits.z.clamp(low, high) - low) / (high - low)
        return torch.where(hits.face >= 0, depth, torch.zeros_like(depth))


def _numpy(values, dtype) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype)


class _ColorTables:
    """Surfaces as tensors on the device, and the colour of each hit."""

    def __init__(self, faces: np.ndarray, surfaces: Surfaces, device: torch.device):
        def tensor(array: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(array)).to(device)

        self.faces = tensor(faces.astype(np.int64))
        self.base_color = tensor(surfaces.base_color.astype(np.float32))
        self.vertex_color = tensor(surfaces.vertex_color)
        self.vertex_coloured = tensor(surfaces.vertex_coloured)
        self.any_vertex_coloured = bool(surfaces.vertex_coloured.any())
        self.uv = tensor(surfaces.uv)
        self.texture = tensor(surfaces.texture.astype(np.int64))
        self.any_texture = bool((surfaces.texture >= 0).any())
        self.texels = tensor(surfaces.texels.astype(np.float32))
        self.texture_offset = tensor(surfaces.texture_offset)
        self.texture_shape = tensor(surfaces.texture_shape)

    def shade(self, hits: Hits) -> torch.Tensor:
        """uint8 [R, 3]: each ray's surface colour, black where it hit nothing."""
        device = self.faces.device
        face, u, v = (t.to(device) for t in (hits.face, hits.u, hits.v))
        hit = face >= 0
        index = face.long().clamp(min=0)
        color = self.base_color[index]
        weights = torch.stack([1 - u - v, u, v], -1)[..., None]  # [R, 3 vertices, 1]
        if self.any_vertex_coloured:
            blended = (self.vertex_color[self.faces[index]] * weights).sum(1)
            color = torch.where(self.vertex_coloured[index][:, None], blended, color)
        if self.any_texture:
            textured = torch.nonzero(hit & (self.texture[index] >= 0)).squeeze(1)
            rows = index[textured]
            uv = (self.uv[self.faces[rows]] * weights[textured]).sum(1)
            color[textured] = self._sample(self.texture[rows], uv)
        color = torch.where(hit[:, None], color, torch.zeros_like(color))
        return color.round().clamp(0, 255).to(torch.uint8)

    def _sample(self, texture: torch.Tensor, uv: torch.Tensor) -> torch.Tensor:
        """Bilinear samples [M, 3] of the given textures at `uv` [M, 2], wrapping around (glTF's default
        REPEAT). Texel centres sit at half-integer pixel coordinates; uv's v = 0 is the bottom row."""
        rows, cols = self.texture_shape[texture, 0], self.texture_shape[texture, 1]
        x = uv[:, 0] * cols - 0.5
        y = (1 - uv[:, 1]) * rows - 0.5
        x0, y0 = torch.floor(x), torch.floor(y)
        fx, fy = (x - x0)[:, None], (y - y0)[:, None]
        x0, y0 = x0.long(), y0.long()
        offset = self.texture_offset[texture]

        def texel(dy: int, dx: int) -> torch.Tensor:
            return self.texels[
                offset + torch.remainder(y0 + dy, rows) * cols + torch.remainder(x0 + dx, cols)
            ]

        top = texel(0, 0) * (1 - fx) + texel(0, 1) * fx
        bottom = texel(1, 0) * (1 - fx) + texel(1, 1) * fx
        return top * (1 - fy) + bottom * fy
