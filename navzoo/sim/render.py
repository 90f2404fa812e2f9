"""Batched depth and RGB rendering of 2.5D grid scenes, all environments in one call.

Cameras are level pinholes, so every image column is a vertical plane through the camera and one 2D ray
per column finds everything the column can see. The ray walks the grid exactly (the x and y cell
crossings are two arithmetic sequences, merged without sorting), and each cell it passes is a box from the
floor up to the cell's height. A pixel ray of slope k (height gained per metre) first hits the box of
segment s when k <= T_s, with T_s the steepest slope that still touches that box; so the first hit is where
the running maximum of T reaches k. Because pixel slopes in a column are sorted, the pixel -> segment map
is a histogram and a cumulative sum: no per-pixel search. The ceiling is a plane above everything.
"""

import math
from dataclasses import dataclass

import numba
import numpy as np
import torch

from navzoo.sim import raycast_cpu
from navzoo.sim.materials import CEILING_ID, CHECKER, STRIPES_U, STRIPES_V

# Surface kinds of a hit, used for shading, and how brightly each is lit.
FLOOR_OR_TOP, FACE_X, FACE_Y, CEILING, NOTHING = 0, 1, 2, 3, 4
LIGHT = torch.tensor([1.0, 0.78, 0.9, 0.97, 0.0])


@dataclass
class Camera:
    height: int
    width: int
    hfov: float  # degrees
    max_range: float  # metres of horizontal ray length to walk
    device: torch.device

    def __post_init__(self):
        self.focal = (self.width / 2) / math.tan(math.radians(self.hfov) / 2)
        cols = torch.arange(self.width, dtype=torch.float32, device=self.device)
        rows = torch.arange(self.height, dtype=torch.float32, device=self.device)
        self.tan_u = (cols + 0.5 - self.width / 2) / self.focal  # right of the optical axis is positive
        self.column_angle = torch.atan(self.tan_u)
        self.stretch = torch.sqrt(1 + self.tan_u**2)  # horizontal ray length per unit of z-depth
        # tan of elevation per pixel row, ordered bottom row first
        tan_v_up = (rows + 0.5 - self.height / 2) / self.focal
        self.slope = tan_v_up[None, :] / self.stretch[:, None]  # [W, H] slope of each pixel, bottom first
        self.inv_slope = 1 / torch.where(self.slope == 0, -1e-9, self.slope)
        self.inv_slope_up = torch.where(self.slope > 0, self.inv_slope, math.inf)  # to reach the ceiling


@dataclass
class SceneAtlas:
    """The scenes of a pool stacked into padded tensors on one device."""

    heights: torch.Tensor  # float32 [P, R, C]; cells outside a scene are solid
    materials: torch.Tensor  # int64 [P, R, C]
    rooms: torch.Tensor  # int64 [P, R, C]
    wall_materials: torch.Tensor  # int64 [P, max_rooms]
    ceiling: torch.Tensor  # float32 [P]
    cell_size: float

    @classmethod
    def of_scene(cls, scene) -> "SceneAtlas":
        """An atlas of one scene (slot 0), on the CPU."""
        return cls(
            heights=torch.from_numpy(scene.heights)[None],
            materials=torch.from_numpy(scene.materials.astype(np.int64))[None],
            rooms=torch.from_numpy(scene.rooms.astype(np.int64))[None],
            wall_materials=torch.from_numpy(scene.wall_materials.astype(np.int64))[None],
            ceiling=torch.tensor([scene.ceiling_height]),
            cell_size=scene.cell_size,
        )


@dataclass
class Hits:
    z: torch.Tensor  # float32 [N, W, H] z-depth in metres (inf: nothing within range), bottom row first
    t: torch.Tensor  # float32 [N*W, H] horizontal distance along the column ray
    kind: torch.Tensor | None  # int64 [N, W, H] surface kind


# Ray lengths (in cells) walked by successive passes: most rays meet a wall within the first pass, and
# only the rays that have not are walked again, further.
PASS_CELLS = (8, 20)


def observe(
    atlas: SceneAtlas,
    camera: Camera,
    materials: dict[str, torch.Tensor],
    slots,
    pos,
    heading,
    eye_height: float,
    depth_range: tuple[float, float],
    sensors: tuple[str, ...],
    compiled: bool = False,
    tensor_kernels: bool = False,
) -> dict[str, torch.Tensor]:
    """The camera images of agents at `pos` [N, 2] facing `heading` [N] in `slots`: "depth" [N, H, W, 1]
    normalised from `depth_range` and/or "rgb" [N, H, W, 3] uint8, top row first.

    On the CPU one numba kernel renders them (navzoo.sim.raycast_cpu); on other devices, or with
    `tensor_kernels`, `cast` and `shade` do, which `compiled` runs through torch.compile. Both give the
    same images.
    """
    if pos.device.type == "cpu" and not tensor_kernels:
        return _observe_numba(atlas, camera, materials, slots, pos, heading, eye_height, depth_range, sensors)
    n = pos.shape[0]
    hits, extra = cast(atlas, camera, slots, pos, heading, eye_height, "rgb" in sensors, compiled)
    observations = {}
    if "depth" in sensors:
        low, high = depth_range
        z = hits.z.permute(0, 2, 1).flip(1)  # [N, H, W], top row first
        observations["depth"] = ((z.clamp(low, high) - low) / (high - low))[..., None]
    if "rgb" in sensors:
        assert extra is not None  # cast gives the surfaces when asked for them
        observations["rgb"] = shade(hits, *extra, materials, n, camera.width, camera.height)
    return observations


def _rays(camera: Camera, pos, heading, cell: float) -> dict[str, torch.Tensor]:
    """One ray per image column: direction, grid position (in cells), [N, W] each."""
    n, w = pos.shape[0], camera.width
    angle = heading[:, None] - camera.column_angle[None, :]  # [N, W]
    return {
        "dx": torch.cos(angle),
        "dy": torch.sin(angle),
        "gx": (pos[:, 0:1] / cell).expand(n, w),
        "gy": (pos[:, 1:2] / cell).expand(n, w),
    }


def _full_crossings(camera: Camera, cell: float) -> int:
    """Crossings per axis that a ray walks to reach max_range."""
    return math.ceil(camera.max_range / cell) + 2


def _observe_numba(atlas, camera, materials, slots, pos, heading, eye_height, depth_range, sensors) -> dict:
    n, h, w = pos.shape[0], camera.height, camera.width
    rays = {k: v.contiguous().numpy() for k, v in _rays(camera, pos, heading, atlas.cell_size).items()}
    depth = torch.empty((n, h, w) if "depth" in sensors else (0, 1, 1))
    rgb = torch.empty((n, h, w, 3) if "rgb" in sensors else (0, 1, 1, 3), dtype=torch.uint8)
    f32 = np.float32
    scene = (
        atlas.heights.numpy(),
        atlas.ceiling.numpy(),
        atlas.materials.numpy(),
        atlas.rooms.numpy(),
        atlas.wall_materials.numpy(),
        f32(atlas.cell_size),
    )
    lens = (
        (camera.focal * camera.stretch).numpy(),
        camera.slope.numpy(),
        camera.inv_slope.numpy(),
        camera.inv_slope_up.numpy(),
        f32(eye_height),
        CEILING_ID,
    )
    shading = (
        materials["color"].numpy(),
        materials["alt_color"].numpy(),
        materials["pattern"].numpy(),
        materials["period"].numpy(),
        LIGHT.numpy(),
    )
    low, high = depth_range
    # The kernel's threads follow torch's intra-op setting (a training worker's torch_threads).
    # numba.config is numba's documented spelling; its settings are set from the environment at import, so
    # the type checker sees neither the re-export nor the attribute.
    threads = min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)  # pyright: ignore[reportPrivateImportUsage, reportAttributeAccessIssue]
    kernel = raycast_cpu.render_serial
    if threads > 1:
        numba.set_num_threads(threads)
        kernel = raycast_cpu.render_parallel
    kernel(
        scene,
        lens,
        shading,
        (rays["gx"], rays["gy"], rays["dx"], rays["dy"]),
        slots.numpy(),
        camera.stretch.numpy(),
        _full_crossings(camera, atlas.cell_size),
        (f32(low), f32(high), f32(high - low)),
        depth.numpy(),
        rgb.numpy(),
    )
    observations = {}
    if "depth" in sensors:
        observations["depth"] = depth[..., None]
    if "rgb" in sensors:
        observations["rgb"] = rgb
    return observations


def cast(
    atlas: SceneAtlas,
    camera: Camera,
    slots,
    pos,
    heading,
    eye_height: float,
    with_surfaces: bool,
    compiled: bool = False,
):
    """Depth (and what RGB shading needs) for agents at `pos` [N, 2] facing `heading` [N] in `slots`.

    `compiled` runs the two kernels through torch.compile: they fuse into far fewer passes over memory,
    at the cost of compiling once per process.
    """
    n, w = pos.shape[0], camera.width
    cell = atlas.cell_size
    rays = {k: v.reshape(-1) for k, v in _rays(camera, pos, heading, cell).items()}
    rays["slot"] = slots.repeat_interleave(w)
    rays["column"] = torch.arange(w, device=pos.device).repeat(n)
    result = _cast_tensors(
        atlas, camera, rays, _full_crossings(camera, cell), eye_height, with_surfaces, compiled
    )
    z = result["t"].view(n, w, camera.height) / camera.stretch[:, None]
    if not with_surfaces:
        return Hits(z, result["t"], None), None
    geometry = {
        "dx": rays["dx"],
        "dy": rays["dy"],
        "gx": rays["gx"] * cell,
        "gy": rays["gy"] * cell,
        "slope": camera.slope.repeat(n, 1),
        "eye": eye_height,
    }
    return Hits(z, result["t"], result["kind"].view(n, w, camera.height)), (result["surface"], geometry)


def _cast_tensors(
    atlas: SceneAtlas,
    camera: Camera,
    rays: dict,
    full: int,
    eye_height: float,
    with_surfaces: bool,
    compiled: bool,
) -> dict:
    """Walk every ray for a fixed number of crossings at once, in passes of growing length."""
    count, h, device = rays["dx"].shape[0], camera.height, rays["dx"].device
    passes = [k for k in PASS_CELLS if k < full] + [full]
    result = {"t": torch.empty(count, h, device=device)}
    if with_surfaces:
        result["kind"] = torch.empty(count, h, dtype=torch.long, device=device)
        result["surface"] = torch.empty(count, h, dtype=torch.long, device=device)
    pending = torch.arange(count, device=device)
    for k in passes:
        # Small batches stay eager: compiled kernels gain nothing there and would recompile for tiny sizes.
        march, resolve_pixels = _kernels(compiled and len(pending) >= COMPILE_MIN_RAYS)
        subset = {key: v[pending] for key, v in rays.items()}
        segments = march(atlas, subset, k, eye_height, camera.max_range)
        done = segments["done"] if k < passes[-1] else torch.ones_like(segments["done"])
        # Each ray's pixels are resolved once, in the pass that found its wall.
        finished = torch.nonzero(done).squeeze(1)
        resolved = resolve_pixels(
            atlas,
            camera,
            {key: v[finished] for key, v in subset.items()},
            {key: v[finished] for key, v in segments.items()},
            eye_height,
            with_surfaces,
        )
        for key, value in resolved.items():
            result[key][pending[finished]] = value
        pending = pending[~done]
        if len(pending) == 0:
            break
    return result


_COMPILED: dict = {}
COMPILE_MIN_RAYS = 256


def _kernels(compiled: bool):
    if not compiled:
        return _march, _resolve_pixels
    if not _COMPILED:
        _COMPILED["march"] = torch.compile(_march, dynamic=True)
        _COMPILED["resolve"] = torch.compile(_resolve_pixels, dynamic=True)
    return _COMPILED["march"], _COMPILED["resolve"]


def _march(atlas: SceneAtlas, rays: dict, k: int, eye_height: float, max_range: float) -> dict:
    """Walk each ray over its first k grid crossings per axis: the boxes it passes, in order."""
    cell = atlas.cell_size
    rows, cols = atlas.heights.shape[1:]
    tx, step_x = _crossings(rays["gx"], rays["dx"], cell, k)
    ty, step_y = _crossings(rays["gy"], rays["dy"], cell, k)
    end, is_x = _merge(tx, ty)  # [R, 2K] crossing distances in order; segment s ends at crossing s

    # Cell of every segment by counting the crossings before it (exact integer DDA).
    passed_x, passed_y = _entered(is_x)
    col = torch.floor(rays["gx"]).long()[:, None] + step_x[:, None] * passed_x
    row = torch.floor(rays["gy"]).long()[:, None] + step_y[:, None] * passed_y
    inside = (row >= 0) & (row < rows) & (col >= 0) & (col < cols)
    flat = (rays["slot"][:, None] * rows + row.clamp(0, rows - 1)) * cols + col.clamp(0, cols - 1)
    ceiling = atlas.ceiling[rays["slot"]][:, None]
    height = torch.where(inside, atlas.heights.reshape(-1)[flat], ceiling)

    start = torch.cat([torch.zeros_like(end[:, :1]), end[:, :-1]], 1)
    reach = torch.minimum(tx[:, -1], ty[:, -1])[:, None]  # past this, crossings of one axis are missing
    valid = start < reach
    rise = height - eye_height
    # Steepest slope that touches the box: its top edge at entry (tall boxes) or at exit (low boxes).
    threshold = torch.where(rise >= 0, rise / start.clamp_min(1e-6), rise / end.clamp_min(1e-6))
    threshold = torch.where(valid, threshold, -math.inf)
    # A ray is finished once it enters a wall (nothing behind it shows) or has walked the full range.
    done = ((height >= ceiling) & valid).any(1) | (reach[:, 0] > max_range)
    return {
        "height": height,
        "start": start,
        "running": torch.cummax(threshold, 1).values,
        "flat": flat,
        "is_x": is_x,
        "ceiling": ceiling,
        "done": done,
    }


def _resolve_pixels(
    atlas: SceneAtlas, camera: Camera, rays: dict, segments: dict, eye_height: float, with_surfaces: bool
) -> dict:
    """The surface each pixel of each ray's column sees, and how far along the ray it is."""
    h = camera.height
    running = segments["running"]
    r, count = running.shape
    column = rays["column"]
    # Pixel rows (bottom first) with slope <= running max, in closed form since slope rises with the row.
    covered = torch.ceil(h / 2 - 0.5 - running * (camera.focal * camera.stretch[column][:, None]))
    covered = (h - covered).clamp(0, h).long()
    hist = torch.zeros(r, h + 1, dtype=torch.long, device=running.device)
    hist.scatter_add_(1, covered, torch.ones_like(covered))
    segment = torch.cumsum(hist, 1)[:, :h]  # first segment hit by each pixel; `count` means none

    seg = segment.clamp_max(count - 1)
    hit_height = torch.gather(segments["height"], 1, seg)
    hit_start = torch.gather(segments["start"], 1, seg)
    face = eye_height + camera.slope[column] * hit_start <= hit_height
    t = torch.where(face, hit_start, (hit_height - eye_height) * camera.inv_slope[column])
    t = torch.where(segment < count, t, math.inf)
    t_ceiling = (segments["ceiling"] - eye_height) * camera.inv_slope_up[column]
    on_ceiling = t_ceiling < t
    t = torch.minimum(t, t_ceiling)
    result = {"t": t}
    if with_surfaces:
        is_x = segments["is_x"]
        entered_by_x = torch.gather(torch.cat([is_x[:, :1], is_x], 1), 1, seg)  # crossing that began it
        kind = torch.where(face, torch.where(entered_by_x.bool(), FACE_X, FACE_Y), FLOOR_OR_TOP)
        kind = torch.where(on_ceiling, CEILING, kind)
        result["kind"] = torch.where(torch.isinf(t), NOTHING, kind)
        cells = torch.gather(segments["flat"], 1, seg)
        previous = torch.gather(segments["flat"], 1, (seg - 1).clamp_min(0))
        surface = _surface_materials(atlas, cells, previous, rays["slot"])
        result["surface"] = torch.where(result["kind"] == CEILING, CEILING_ID, surface)
    return result


def _crossings(g, d, cell: float, k: int):
    """Distances along the ray to the first k grid lines crossed in one axis, and the step direction."""
    step = torch.where(d >= 0, 1, -1)
    speed = d.abs().clamp_min(1e-9)
    first = torch.where(d >= 0, torch.floor(g) + 1 - g, g - torch.floor(g)) * cell / speed
    idx = torch.arange(k, device=g.device, dtype=g.dtype)
    return first[:, None] + idx[None, :] * (cell / speed)[:, None], step


def _merge(tx, ty):
    """Merge two ascending sequences per row; returns merged values and 1 where a value came from tx.

    Each x crossing's place is its index plus the number of y crossings before it (closed form, since ty
    is arithmetic); the y crossings fill the remaining places in order. Any rounding in a tie only swaps
    two equal distances, and the result is always a permutation.
    """
    r, k = tx.shape
    ar = torch.arange(k, device=tx.device)
    spacing = (ty[:, 1] - ty[:, 0])[:, None]
    y_before_x = torch.ceil((tx - ty[:, :1]) / spacing).clamp(0, k).long()  # non-decreasing along a row
    rank_x = ar + y_before_x
    # x crossings placed before the j-th y crossing: those with y_before_x <= j
    hist = torch.zeros(r, k + 1, dtype=torch.long, device=tx.device)
    hist.scatter_add_(1, y_before_x, torch.ones_like(y_before_x))
    rank_y = ar + torch.cumsum(hist, 1)[:, :k]
    merged = torch.empty(r, 2 * k, dtype=tx.dtype, device=tx.device)
    merged.scatter_(1, rank_x, tx)
    merged.scatter_(1, rank_y, ty)
    is_x = torch.zeros(r, 2 * k, dtype=torch.long, device=tx.device)
    is_x.scatter_(1, rank_x, 1)
    return merged, is_x


def _entered(is_x):
    """Numbers of x and of y crossings passed before each segment; segment 0 is the agent's own cell."""
    passed_x = torch.cumsum(is_x, 1) - is_x
    passed_y = torch.arange(is_x.shape[1], device=is_x.device) - passed_x
    return passed_x, passed_y


def _surface_materials(atlas: SceneAtlas, cells, previous, slot_rays):
    """Material of each hit: the cell's own, or for walls the paint of the room the ray came from."""
    material = atlas.materials.reshape(-1)[cells]
    room = atlas.rooms.reshape(-1)[previous].clamp_min(0)
    wall_paint = atlas.wall_materials[slot_rays[:, None].expand_as(room), room]
    return torch.where(material < 0, wall_paint, material)


def shade(hits: Hits, surface, geometry, table: dict[str, torch.Tensor], n: int, w: int, h: int):
    """RGB uint8 [N, H, W, 3] from hit surfaces: material colour, texture pattern and a simple light."""
    t = hits.t
    px = geometry["gx"][:, None] + geometry["dx"][:, None] * t.clamp_max(1e3)
    py = geometry["gy"][:, None] + geometry["dy"][:, None] * t.clamp_max(1e3)
    pz = geometry["eye"] + geometry["slope"] * t.clamp_max(1e3)
    assert hits.kind is not None  # cast with_surfaces, as for every shaded image
    kind = hits.kind.reshape(n * w, h)
    u = torch.where(kind == FACE_X, py, px)
    v = torch.where((kind == FACE_X) | (kind == FACE_Y), pz, py)
    period = table["period"][surface]
    pattern = table["pattern"][surface]
    a = torch.floor(2 * u / period)
    b = torch.floor(2 * v / period)
    alt = torch.where(
        pattern == STRIPES_U,
        a,
        torch.where(pattern == CHECKER, a + b, torch.where(pattern == STRIPES_V, b, torch.zeros_like(a))),
    )
    alt = torch.remainder(alt, 2)[..., None]
    color = table["color"][surface] * (1 - alt) + table["alt_color"][surface] * alt
    light = LIGHT.to(t.device)[kind]
    light = light * (1.0 - 0.02 * t.clamp(0, 10))  # faint falloff keeps far surfaces apart from near ones
    rgb = (color * light[..., None]).clamp(0, 255).to(torch.uint8)
    return rgb.reshape(n, w, h, 3).permute(0, 2, 1, 3).flip(1)
