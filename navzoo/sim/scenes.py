"""Procedurally generated indoor scenes on a 0.25 m grid.

A scene is a 2.5D height grid: 0 is floor, a positive value is the top of a solid box standing on the floor
(furniture), and walls reach the ceiling. Rooms come from a binary space partition with a door in every
partition wall; offices first carve corridors and give every room that touches one a door onto it, so all
floor is connected before furniture is placed, and furniture that would cut the floor apart is rejected.
Everything is deterministic from the scene id, and the id names its split, so splits never share a scene.
"""

import hashlib
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from navzoo.errors import ConfigError
from navzoo.sim.config import SCENE_FAMILIES, SPLITS
from navzoo.sim.materials import FLOOR_IDS, FURNITURE_IDS, WALL_IDS
from navzoo.typed_config import is_decimal

CELL_SIZE = 0.25  # metres per grid cell
WALL = -1  # room id of wall cells
SCENES_PER_SPLIT = {"train": 100_000, "val": 6, "test": 6}  # per family


@dataclass(frozen=True)
class Family:
    name: str
    width: tuple[float, float]  # outer size range in metres (x)
    depth: tuple[float, float]  # outer size range in metres (y)
    max_room: float  # rooms larger than this along an axis are split
    min_room: float
    corridors: int  # 0: none, 1: one horizontal, 2: a cross
    furniture_per_m2: float


FAMILIES = {
    "apartment-s": Family("apartment-s", (6.0, 9.0), (5.0, 7.0), 4.5, 2.5, 0, 0.12),
    "apartment": Family("apartment", (10.0, 14.0), (8.0, 11.0), 5.0, 2.5, 0, 0.12),
    "office": Family("office", (18.0, 26.0), (12.0, 18.0), 6.0, 3.0, 1, 0.10),
    "office-l": Family("office-l", (30.0, 40.0), (20.0, 28.0), 6.5, 3.0, 2, 0.10),
}
assert tuple(FAMILIES) == SCENE_FAMILIES

# name, footprint (cells along x, cells along y), height range in metres (None: up to the ceiling)
FURNITURE_CATALOG: tuple[tuple[str, tuple[int, int], tuple[float, float] | None], ...] = (
    ("bed", (8, 6), (0.45, 0.6)),
    ("sofa", (8, 3), (0.7, 0.9)),
    ("table", (5, 3), (0.72, 0.78)),
    ("chair", (2, 2), (0.85, 1.0)),
    ("shelf", (4, 2), (1.7, 2.1)),
    ("wardrobe", (5, 2), (1.9, 2.2)),
    ("cabinet", (2, 2), (0.9, 1.1)),
    ("plant", (2, 2), (1.0, 1.5)),
    ("counter", (6, 3), (0.9, 0.95)),
    ("partition", (6, 1), (1.2, 1.5)),
    ("pillar", (2, 2), None),  # reaches the ceiling
)


@dataclass
class Scene:
    scene_id: str
    family: str
    ceiling_height: float
    heights: np.ndarray  # float32 [rows, cols]; row is y, column is x
    materials: np.ndarray  # int16 [rows, cols]; floor or furniture material, -1 on walls
    rooms: np.ndarray  # int16 [rows, cols]; room index, -1 on walls
    wall_materials: np.ndarray  # int16 [num_rooms]; the paint of each room's walls
    cell_size: float = CELL_SIZE
    furniture: list = field(default_factory=list)  # (name, row0, row1, col0, col1, height)

    @property
    def shape(self) -> tuple[int, int]:
        return self.heights.shape

    @property
    def size_m(self) -> tuple[float, float]:
        rows, cols = self.heights.shape
        return cols * self.cell_size, rows * self.cell_size

    @classmethod
    def from_arrays(
        cls, heights, ceiling_height: float, scene_id: str = "custom", materials=None, rooms=None
    ):
        """A hand-built scene: any cell with a height above 0 is a solid box of that height."""
        heights = np.asarray(heights, dtype=np.float32)
        walls = heights >= ceiling_height
        if rooms is None:
            rooms = np.where(walls, WALL, 0).astype(np.int16)
        if materials is None:
            materials = np.where(walls, -1, np.where(heights > 0, FURNITURE_IDS[0], FLOOR_IDS[0])).astype(
                np.int16
            )
        num_rooms = int(rooms.max()) + 1
        return cls(
            scene_id,
            "custom",
            float(ceiling_height),
            heights,
            materials.astype(np.int16),
            rooms.astype(np.int16),
            np.full(max(num_rooms, 1), WALL_IDS[0], dtype=np.int16),
        )


def scene_id(family: str, split: str, index: int) -> str:
    return f"{family}/{split}/{index:05d}"


def parse_scene_id(sid: str) -> tuple[str, str, int]:
    parts = sid.split("/")
    if len(parts) != 3 or parts[0] not in FAMILIES or parts[1] not in SPLITS or not is_decimal(parts[2]):
        raise ConfigError(
            "scene_id",
            sid,
            "'<family>/<split>/<index>' with family in "
            f"{SCENE_FAMILIES} and split in {SPLITS}, e.g. 'apartment/val/00002'",
        )
    family, split, index = parts[0], parts[1], int(parts[2])
    if index >= SCENES_PER_SPLIT[split]:
        raise ConfigError("scene_id", sid, f"an index below {SCENES_PER_SPLIT[split]} for split {split!r}")
    return family, split, index


def scene_family(sid: str) -> str | None:
    """The family of a navzoo scene id; None for any other scene (a scanned mesh's path, say)."""
    try:
        return parse_scene_id(sid)[0]
    except ConfigError:
        return None


def split_scene_ids(split: str, families: tuple[str, ...]) -> list[str]:
    """The evaluation scenes of a split, interleaved across families (train scenes are unbounded)."""
    count = SCENES_PER_SPLIT[split]
    return [scene_id(f, split, i) for i in range(count) for f in families]


def stable_seed(*parts: object) -> int:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def generate_scene(sid: str) -> Scene:
    """Build the scene with this id; the same id always gives the same scene."""
    family_name, _, _ = parse_scene_id(sid)
    family = FAMILIES[family_name]
    rng = np.random.default_rng(stable_seed("scene", sid))
    cols = _cells(rng.uniform(*family.width))
    rows = _cells(rng.uniform(*family.depth))
    ceiling = float(rng.uniform(2.5, 3.0))
    plan = _FloorPlan(rows, cols, family, rng)
    plan.build()
    heights = np.where(plan.rooms == WALL, ceiling, 0.0).astype(np.float32)
    num_rooms = len(plan.room_rects)
    floor_mats = rng.choice(FLOOR_IDS, size=num_rooms).astype(np.int16)
    wall_mats = rng.choice(WALL_IDS, size=num_rooms).astype(np.int16)
    materials = np.where(plan.rooms == WALL, -1, floor_mats[np.maximum(plan.rooms, 0)]).astype(np.int16)
    scene = Scene(sid, family.name, ceiling, heights, materials, plan.rooms, wall_mats)
    _furnish(scene, plan, family, rng)
    return scene


def _cells(metres: float) -> int:
    return round(metres / CELL_SIZE)


class _FloorPlan:
    """Carves rooms, corridors and doors out of a grid that starts as solid wall."""

    def __init__(self, rows: int, cols: int, family: Family, rng: np.random.Generator):
        self.rows, self.cols, self.family, self.rng = rows, cols, family, rng
        self.rooms = np.full((rows, cols), WALL, dtype=np.int16)
        self.room_rects: list[tuple[int, int, int, int]] = []  # (r0, r1, c0, c1), end exclusive
        self.corridor_rects: list[tuple[int, int, int, int]] = []
        self.doors: list[tuple[int, int, int, int]] = []  # cells (r0, r1, c0, c1) opened in a wall

    def build(self) -> None:
        interior = (1, self.rows - 1, 1, self.cols - 1)
        for region in self._carve_corridors(interior):
            self._partition(region)
        for room, rect in enumerate(self.room_rects):
            r0, r1, c0, c1 = rect
            self.rooms[r0:r1, c0:c1] = room
        for rect in self.room_rects:
            if rect not in self.corridor_rects:
                self._door_to_corridor(rect)
        self._carve_doors()

    def _carve_corridors(self, interior):
        r0, r1, c0, c1 = interior
        width = 8  # 2 m
        if self.family.corridors == 0:
            return [interior]
        mid_r = int(self.rng.integers(r0 + (r1 - r0) // 3, r1 - (r1 - r0) // 3 - width))
        corridors = [(mid_r, mid_r + width, c0, c1)]
        regions = [(r0, mid_r - 1, c0, c1), (mid_r + width + 1, r1, c0, c1)]
        if self.family.corridors == 2:
            mid_c = int(self.rng.integers(c0 + (c1 - c0) // 3, c1 - (c1 - c0) // 3 - width))
            corridors.append((r0, r1, mid_c, mid_c + width))
            regions = [
                piece
                for rr0, rr1, _, _ in regions
                for piece in ((rr0, rr1, c0, mid_c - 1), (rr0, rr1, mid_c + width + 1, c1))
            ]
        self.corridor_rects = corridors
        self.room_rects.extend(corridors)
        return regions

    def _partition(self, rect) -> None:
        r0, r1, c0, c1 = rect
        height, width = r1 - r0, c1 - c0
        max_cells, min_cells = _cells(self.family.max_room), _cells(self.family.min_room)
        can_split_rows = height >= 2 * min_cells + 1
        can_split_cols = width >= 2 * min_cells + 1
        want = (height > max_cells and can_split_rows) or (width > max_cells and can_split_cols)
        if not want:
            self.room_rects.append(rect)
            return
        split_rows = can_split_rows and (height >= width or not can_split_cols)
        for _ in range(20):
            if split_rows:
                k = int(self.rng.integers(r0 + min_cells, r1 - min_cells))
                if self._near_door(k, "row", c0, c1):
                    continue
                first, second = (r0, k, c0, c1), (k + 1, r1, c0, c1)
                self._open_door(k, "row", c0, c1)
            else:
                k = int(self.rng.integers(c0 + min_cells, c1 - min_cells))
                if self._near_door(k, "col", r0, r1):
                    continue
                first, second = (r0, r1, c0, k), (r0, r1, k + 1, c1)
                self._open_door(k, "col", r0, r1)
            self._partition(first)
            self._partition(second)
            return
        self.room_rects.append(rect)

    def _near_door(self, line: int, axis: str, lo: int, hi: int) -> bool:
        """A new wall at this row/column would end inside (or beside) an existing door."""
        for r0, r1, c0, c1 in self.doors:
            if axis == "row" and r0 - 1 <= line <= r1 and (c0 == lo - 1 or c1 == hi + 1):
                return True
            if axis == "col" and c0 - 1 <= line <= c1 and (r0 == lo - 1 or r1 == hi + 1):
                return True
        return False

    def _open_door(self, line: int, axis: str, lo: int, hi: int) -> None:
        span = int(self.rng.integers(3, 6))  # 0.75 m to 1.25 m
        span = min(span, hi - lo)
        start = int(self.rng.integers(lo, hi - span + 1))
        door = (
            (line, line + 1, start, start + span) if axis == "row" else (start, start + span, line, line + 1)
        )
        self.doors.append(door)

    def _door_to_corridor(self, rect) -> None:
        r0, r1, c0, c1 = rect
        for cr0, cr1, cc0, cc1 in self.corridor_rects:
            lo, hi = max(c0, cc0), min(c1, cc1)
            if hi - lo >= 3 and (cr0 == r1 + 1 or cr1 == r0 - 1):
                self._open_door(r1 if cr0 == r1 + 1 else r0 - 1, "row", lo, hi)
                return
            lo, hi = max(r0, cr0), min(r1, cr1)
            if hi - lo >= 3 and (cc0 == c1 + 1 or cc1 == c0 - 1):
                self._open_door(c1 if cc0 == c1 + 1 else c0 - 1, "col", lo, hi)
                return

    def _carve_doors(self) -> None:
        # A door cell takes the room id of the floor on one side, so its floor has that room's material.
        for r0, r1, c0, c1 in self.doors:
            if r1 - r0 == 1:
                neighbour = self.rooms[r0 - 1, c0:c1] if r0 > 0 else self.rooms[r1, c0:c1]
            else:
                neighbour = self.rooms[r0:r1, c0 - 1] if c0 > 0 else self.rooms[r0:r1, c1]
            room = int(neighbour.max())
            self.rooms[r0:r1, c0:c1] = room


def _furnish(scene: Scene, plan: _FloorPlan, family: Family, rng: np.random.Generator) -> None:
    """Place furniture boxes in rooms, keeping doorways clear and all floor connected."""
    reserved = np.zeros(scene.shape, dtype=bool)
    for r0, r1, c0, c1 in plan.doors:
        reserved[max(r0 - 3, 0) : r1 + 3, max(c0 - 3, 0) : c1 + 3] = True
    free_cells = int((scene.heights == 0).sum())
    catalog = [
        item for item in FURNITURE_CATALOG if family.corridors or item[0] not in ("partition", "pillar")
    ]
    for rect in plan.room_rects:
        if rect in plan.corridor_rects:
            continue
        r0, r1, c0, c1 = rect
        area = (r1 - r0) * (c1 - c0) * CELL_SIZE**2
        for _ in range(rng.poisson(area * family.furniture_per_m2)):
            name, (w, d), heights = catalog[rng.integers(len(catalog))]
            if rng.random() < 0.5:
                w, d = d, w
            if d > r1 - r0 - 2 or w > c1 - c0 - 2:
                continue
            fr = int(rng.integers(r0, r1 - d + 1))
            fc = int(rng.integers(c0, c1 - w + 1))
            if rng.random() < 0.6:  # most furniture stands against a wall
                fr = r0 if rng.random() < 0.5 else r1 - d
            box = (slice(fr, fr + d), slice(fc, fc + w))
            if reserved[box].any() or (scene.heights[box] != 0).any():
                continue
            height = scene.ceiling_height if heights is None else float(rng.uniform(*heights))
            scene.heights[box] = height
            if _largest_component(scene.heights == 0) != free_cells - d * w:
                scene.heights[box] = 0.0  # it would cut the floor apart
                continue
            free_cells -= d * w
            scene.materials[box] = rng.choice(FURNITURE_IDS)
            scene.furniture.append((name, fr, fr + d, fc, fc + w, height))


def _largest_component(free: np.ndarray) -> int:
    # Without `output`, label returns (labels, count); scipy has no type hints to say so.
    labels, count = ndimage.label(free)  # pyright: ignore[reportGeneralTypeIssues]
    return int(np.bincount(labels.ravel())[1:].max()) if count else 0
