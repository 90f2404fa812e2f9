"""Episodes: where the agent starts and where its goal is, built like habitat's PointNav datasets.

Each scene gets a set of anchor cells on its largest navigable island, with one geodesic distance field
per anchor. A PointGoal episode's goal is an anchor; its start lies on the same island at a geodesic
distance in [min_geodesic, max_geodesic], and starts that are almost straight-line (geodesic/euclidean
ratio below 1.1) are kept only with a small probability, as habitat's generator does. Flee episodes start at
an anchor, so the distance field from the start is ready. Episode sets of the val and test splits are
fixed by the scene ids, and read from / written to habitat-lab's PointNav JSON(.gz) format.
"""

import gzip
import json
import math
import os
import reprlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from navzoo.errors import ConfigError, EpisodeError
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import Scene, generate_scene, parse_scene_id, split_scene_ids, stable_seed
from navzoo.storage.bounded import read_bounded

ANCHORS_PER_SCENE = 12
STARTS_PER_ANCHOR = 256
MIN_RATIO = 1.1  # geodesic / euclidean below this is an "easy" episode
EASY_KEEP_PROBABILITY = 0.1
EPISODE_BYTES = 400  # about what save_episodes writes for one episode
# The most JSON load_episodes reads by default, decompressed: some 160,000 episodes, where the val and test
# splits hold hundreds; a gzip bomb or a runaway file stops here instead of filling memory.
MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class Episode:
    episode_id: str
    scene_id: str
    start: tuple[float, float]  # metres, scene frame
    heading: float  # radians, counter-clockwise from +x
    goal: tuple[float, float]
    geodesic_distance: float
    euclidean_distance: float


@dataclass(frozen=True)
class MeshEpisode(Episode):
    """An episode in a scanned scene (SimConfig.scenes_dir): `scene_id` is the mesh's path, and habitat's
    positions are kept in 3D (y up). `start`/`goal` are their floor points (x, -z), as for Episode.
    `dataset_scene_id` is the scene as the episode file names it (without habitat's "data/scene_datasets/"),
    the same on every machine, where `scene_id` depends on where the scenes folder lies."""

    start_position: tuple[float, float, float]
    goal_positions: tuple[tuple[float, float, float], ...]  # every goal; GPS+Compass shows the first
    dataset_scene_id: str


# habitat-lab strips this from a scene_id before joining it to scenes_dir (pointnav_dataset.py).
HABITAT_SCENE_PREFIX = "data/scene_datasets/"


def mesh_path(scene_id: str, scenes_dir: str) -> str:
    """The mesh an episode's scene_id names, by habitat-lab's rule: a leading "data/scene_datasets/" is
    stripped and the rest joined to scenes_dir; an absolute scene_id stays as it is."""
    return os.path.join(scenes_dir, scene_id.removeprefix(HABITAT_SCENE_PREFIX))


@dataclass
class SceneAssets:
    """A scene with its navigation grid, anchor distance fields and sampled start cells."""

    scene: Scene
    nav: NavGrid
    anchors: np.ndarray  # int64 [A, 2] navigation cells (row, col)
    fields: np.ndarray  # float32 [A, rows, cols] geodesic distance from each anchor
    starts: np.ndarray  # int64 [A, STARTS_PER_ANCHOR, 2] PointGoal start cells for each anchor goal


def build_assets(
    scene: Scene, agent_radius: float, min_geodesic: float, max_geodesic: float, seed: int
) -> SceneAssets:
    """Anchors, their fields and start cells for a scene; EpisodeError if no episode fits in it."""
    nav = NavGrid(scene, agent_radius)
    rng = np.random.default_rng(stable_seed("anchors", scene.scene_id, seed))
    island = np.argwhere(nav.island)
    if len(island) < 2:
        raise EpisodeError(
            f"scene {scene.scene_id} has no navigable area for an agent of radius {agent_radius} m;"
            " use a smaller agent_radius or another scene"
        )
    anchors, fields, starts = [], [], []
    # Try more candidate anchors than needed: an anchor in a small dead end may have no start in range.
    for index in rng.permutation(len(island))[: ANCHORS_PER_SCENE * 4]:
        cell = island[index]
        field = nav.distance_field(*cell)
        chosen = _sample_starts(nav, field, cell, min_geodesic, max_geodesic, rng)
        if chosen is None:
            continue
        anchors.append(cell)
        fields.append(field)
        starts.append(chosen)
        if len(anchors) == ANCHORS_PER_SCENE:
            break
    if not anchors:
        raise EpisodeError(
            f"scene {scene.scene_id} has no start/goal pair with a geodesic distance in "
            f"[{min_geodesic}, {max_geodesic}] m; widen min_geodesic/max_geodesic"
        )
    return SceneAssets(
        scene, nav, np.asarray(anchors, dtype=np.int64), np.stack(fields), np.stack(starts).astype(np.int64)
    )


def _sample_starts(
    nav: NavGrid, field: np.ndarray, goal_cell, lo: float, hi: float, rng
) -> np.ndarray | None:
    in_range = nav.island & (field >= lo) & (field <= hi)
    cells = np.argwhere(in_range)
    if len(cells) == 0:
        return None
    euclid = np.hypot(*(cells - goal_cell).T) * nav.cell_size
    ratio = field[cells[:, 0], cells[:, 1]] / np.maximum(euclid, 1e-6)
    keep = (ratio >= MIN_RATIO) | (rng.random(len(cells)) < EASY_KEEP_PROBABILITY)
    cells = cells[keep] if keep.any() else cells
    return cells[rng.integers(len(cells), size=STARTS_PER_ANCHOR)]


@lru_cache(maxsize=64)
def scene_assets(scene_id: str, agent_radius: float, min_geodesic: float, max_geodesic: float) -> SceneAssets:
    """Cached assets of a generated scene (shared by every simulator in the process)."""
    return build_assets(generate_scene(scene_id), agent_radius, min_geodesic, max_geodesic, seed=0)


def generate_episodes(assets: SceneAssets, count: int, seed: int = 0) -> list[Episode]:
    """A reproducible list of PointGoal episodes in one scene."""
    rng = np.random.default_rng(stable_seed("episodes", assets.scene.scene_id, seed))
    episodes = []
    for k in range(count):
        anchor = int(rng.integers(len(assets.anchors)))
        start_cell = assets.starts[anchor, rng.integers(STARTS_PER_ANCHOR)]
        goal_cell = assets.anchors[anchor]
        start, goal = assets.nav.cell_centres(*start_cell), assets.nav.cell_centres(*goal_cell)
        episodes.append(
            Episode(
                episode_id=f"{assets.scene.scene_id}#{k}",
                scene_id=assets.scene.scene_id,
                start=(float(start[0]), float(start[1])),
                heading=float(rng.uniform(-math.pi, math.pi)),
                goal=(float(goal[0]), float(goal[1])),
                geodesic_distance=float(assets.fields[anchor][tuple(start_cell)]),
                euclidean_distance=float(np.hypot(*(goal - start))),
            )
        )
    return episodes


def split_episodes(
    split: str,
    families: tuple[str, ...],
    per_scene: int,
    agent_radius: float,
    min_geodesic: float,
    max_geodesic: float,
) -> list[Episode]:
    """The fixed episode set of the val or test split (train uses freshly sampled episodes)."""
    episodes = []
    for sid in split_scene_ids(split, families):
        assets = scene_assets(sid, agent_radius, min_geodesic, max_geodesic)
        episodes.extend(generate_episodes(assets, per_scene))
    return episodes


def episodes_for(config) -> list[Episode] | None:
    """The fixed episodes a SimConfig runs: its episodes_file, else its val or test set; None for train.
    ConfigError for scanned scenes (scenes_dir) of a fixed split without an episodes file."""
    if config.episodes_file is not None:
        return load_episodes(config.episodes_file, scenes_dir=config.scenes_dir)
    if config.split == "train":
        return None
    if config.scenes_dir is not None:
        raise ConfigError(
            "episodes_file",
            None,
            f"a habitat PointNav episodes file (.json.gz) whose scenes are in scenes_dir: the "
            f"{config.split} split runs fixed episodes (split='train' samples them from its meshes)",
        )
    return split_episodes(
        config.split,
        config.scene_families,
        config.episodes_per_scene,
        config.agent_radius,
        config.min_geodesic,
        config.max_geodesic,
    )


# --- habitat-lab PointNav dataset format -------------------------------------------------------------
# habitat is y-up with the agent looking down -z; our scene frame is (x, y) on the floor with headings
# counter-clockwise from +x. A point (x, y) is habitat (x, 0, -y); heading theta is a yaw of theta - pi/2.


def to_habitat_position(xy) -> list[float]:
    return [float(xy[0]), 0.0, -float(xy[1])]


def from_habitat_position(position) -> tuple[float, float]:
    return float(position[0]), -float(position[2])


def heading_to_quaternion(heading: float) -> list[float]:
    yaw = heading - math.pi / 2
    return [0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)]  # x, y, z, w


def quaternion_to_heading(q) -> float:
    x, y, z, w = q
    yaw = math.atan2(2 * (w * y + x * z), 1 - 2 * (y * y + x * x))
    return math.remainder(yaw + math.pi / 2, 2 * math.pi)


def save_episodes(
    episodes: list[Episode], path: str | Path, scene_path: Callable[[str], str] | None = None
) -> None:
    """Write episodes as a habitat-lab PointNav dataset (.json or .json.gz). `scene_path` turns a navzoo
    scene id into the scene_id written (an exported mesh's path, see navzoo.interop.habitat_scenes)."""
    data = {
        "episodes": [
            {
                "episode_id": ep.episode_id,
                "scene_id": scene_path(ep.scene_id) if scene_path else ep.scene_id,
                "start_position": to_habitat_position(ep.start),
                "start_rotation": heading_to_quaternion(ep.heading),
                "info": {
                    "geodesic_distance": ep.geodesic_distance,
                    "euclidean_distance": ep.euclidean_distance,
                },
                "goals": [{"position": to_habitat_position(ep.goal), "radius": None}],
                "shortest_paths": None,
                "start_room": None,
            }
            for ep in episodes
        ]
    }
    path = Path(path)
    text = json.dumps(data)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def load_episodes(
    path: str | Path, *, max_bytes: int = MAX_BYTES, scenes_dir: str | None = None
) -> list[Episode]:
    """Read a habitat-lab PointNav dataset (.json or .json.gz) whose scene ids are navzoo scene ids, or,
    with `scenes_dir`, mesh paths relative to it (habitat's rule, `mesh_path`): then the episodes are
    MeshEpisodes.

    As habitat-lab's PointNavDatasetV1 does, where a `content/` folder stands beside the file (the per-scene
    files of habitat's train splits, whose top file lists no episodes), the episodes of every
    `content/*.json.gz` in it follow the file's own, scenes in name order (habitat's `content_scenes: ["*"]`).

    EpisodeError, naming the file, the episode and the problem, unless every file is whole and every episode
    has a navzoo scene id, finite positions of three numbers and a unit-quaternion start rotation, and
    unless each file's JSON (decompressed) holds at most `max_bytes`. Whether starts and goals lie on free
    floor, joined by a path and apart, is checked where the scenes are built (navzoo.sim.pool)."""
    path = Path(path)
    if not path.is_file():
        raise EpisodeError(f"episode file {path} does not exist; write one with navzoo.sim.save_episodes")
    content = path.parent / "content"
    # habitat sorts the scene names (the file names without .json.gz), which can differ from the names' order
    scenes = (
        sorted(content.glob("*.json.gz"), key=lambda f: f.name.removesuffix(".json.gz"))
        if content.is_dir()
        else []
    )
    files = [path, *scenes]
    episodes = [episode for file in files for episode in _episodes_in(file, max_bytes, scenes_dir)]
    if not episodes:
        where = f" or in {content}" if len(files) > 1 else ""
        raise EpisodeError(f"episode file {path} holds no episodes{where}")
    return episodes


def _episodes_in(path: Path, max_bytes: int, scenes_dir: str | None) -> list[Episode]:
    """The episodes of one dataset file."""
    data = _read_json(path, max_bytes)
    if not isinstance(data, dict) or not isinstance(data.get("episodes"), list):
        raise EpisodeError(
            f"episode file {path} is not a habitat PointNav dataset; expected "
            f'{{"episodes": [{_FORMAT}, ...]}}'
        )
    return [_parse_episode(raw, index, path, scenes_dir) for index, raw in enumerate(data["episodes"])]


_FORMAT = (
    '{"episode_id", "scene_id", "start_position": [x, y, z], "start_rotation": [x, y, z, w], '
    '"goals": [{"position": [x, y, z]}]}'
)
_REQUIRED_KEYS = ("episode_id", "scene_id", "start_position", "start_rotation", "goals")


def _read_json(path: Path, max_bytes: int):
    """The file's JSON, decompressing at most `max_bytes` of it."""
    reason = (
        f"(an episode is about {EPISODE_BYTES} bytes of JSON): split the file, or pass a larger max_bytes "
        "to navzoo.sim.load_episodes"
    )
    # A truncated .gz ends in EOFError, a damaged one in zlib.error or OSError; bad JSON or UTF-8 in
    # ValueError; JSON nested thousands of levels deep in RecursionError.
    try:
        raw = read_bounded(path, max_bytes, f"episode file {path}", reason, error=EpisodeError)
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc) from exc
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise _unreadable(path, exc) from exc


def _unreadable(path: Path, exc: Exception) -> EpisodeError:
    return EpisodeError(
        f"episode file {path} cannot be read as {'gzip-compressed ' * (path.suffix == '.gz')}JSON "
        f"({type(exc).__name__}: {exc}); it may be truncated or damaged: copy or write it again "
        "(navzoo.sim.save_episodes)"
    )


def _parse_episode(raw, index: int, path: Path, scenes_dir: str | None) -> Episode:
    """One episode of a dataset; EpisodeError naming it (index and episode_id) if a field is unusable."""
    episode_id = raw.get("episode_id") if isinstance(raw, dict) else None
    id_ok = isinstance(episode_id, str | int) and not isinstance(episode_id, bool)
    named = f" (episode_id {reprlib.repr(episode_id)})" if id_ok else ""

    def error(problem: str) -> EpisodeError:
        return EpisodeError(
            f"episode {index}{named} of {path}: {problem}; fix or remove this episode "
            "(navzoo.sim.save_episodes writes valid ones)"
        )

    if not isinstance(raw, dict):
        raise error(f"it is {reprlib.repr(raw)}, not an object like {_FORMAT}")
    missing = [key for key in _REQUIRED_KEYS if key not in raw]
    if missing:
        raise error(f"it lacks {', '.join(map(repr, missing))}; an episode reads {_FORMAT}")
    if not id_ok:
        raise error(f"episode_id is {reprlib.repr(episode_id)}, expected a string")
    try:
        info = _info(raw.get("info"))
        start = _numbers(raw["start_position"], 3, "start_position")
        fields = {
            "episode_id": str(episode_id),
            "start": from_habitat_position(start),
            "heading": quaternion_to_heading(_unit_quaternion(raw["start_rotation"])),
            "goal": from_habitat_position(_goal_position(raw["goals"])),
            "geodesic_distance": _optional_number(info, "geodesic_distance"),
            "euclidean_distance": _optional_number(info, "euclidean_distance"),
        }
        if scenes_dir is None:
            return Episode(scene_id=_scene_id(raw["scene_id"]), **fields)
        return MeshEpisode(
            scene_id=_mesh_scene_id(raw["scene_id"], scenes_dir),
            start_position=(start[0], start[1], start[2]),
            goal_positions=_goal_positions(raw["goals"]),
            dataset_scene_id=raw["scene_id"].removeprefix(HABITAT_SCENE_PREFIX),
            **fields,
        )
    except ValueError as exc:
        raise error(str(exc)) from None


def _scene_id(value) -> str:
    if not isinstance(value, str):
        raise ValueError(
            f"scene_id is {reprlib.repr(value)}, expected a navzoo scene id such as 'apartment/val/00002'"
        )
    if value.endswith(".glb"):  # an exported scene's mesh, <scenes_dir>/navzoo/<family>/<split>/<index>.glb
        value = "/".join(value.removesuffix(".glb").split("/")[-3:])
    try:
        parse_scene_id(value)
    except ValueError as exc:  # parse_scene_id's ConfigError says which ids exist
        raise ValueError(str(exc)) from None
    return value


def _mesh_scene_id(value, scenes_dir: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"scene_id is {reprlib.repr(value)}, expected a mesh path relative to scenes_dir")
    return mesh_path(value, scenes_dir)


def _goal_position(goals) -> list[float]:
    """The first goal's position (a PointNav episode has one goal)."""
    if (
        not isinstance(goals, list)
        or not goals
        or not isinstance(goals[0], dict)
        or "position" not in goals[0]
    ):
        raise ValueError(
            f'goals is {reprlib.repr(goals)}, expected a list whose first goal is {{"position": [x, y, z]}}'
        )
    return _numbers(goals[0]["position"], 3, "goals[0].position")


def _goal_positions(goals) -> tuple[tuple[float, float, float], ...]:
    """Every goal's position (habitat measures the distance to the nearest); the first is checked by
    _goal_position."""
    _goal_position(goals)
    positions = []
    for k, goal in enumerate(goals):
        if not isinstance(goal, dict):
            raise ValueError(f'goals[{k}] is {reprlib.repr(goal)}, expected {{"position": [x, y, z]}}')
        x, y, z = _numbers(goal.get("position"), 3, f"goals[{k}].position")
        positions.append((x, y, z))
    return tuple(positions)


def _info(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"info is {reprlib.repr(value)}, expected an object")
    return value


def _numbers(value, length: int, name: str) -> list[float]:
    """`value` as `length` finite floats; ValueError naming the field otherwise."""
    numbers = [_number(v) for v in value] if isinstance(value, list) else []
    finite = [n for n in numbers if n is not None and math.isfinite(n)]
    if len(numbers) != length or len(finite) != length:
        raise ValueError(f"{name} is {reprlib.repr(value)}, expected a list of {length} finite numbers")
    return finite


def _unit_quaternion(value) -> list[float]:
    q = _numbers(value, 4, "start_rotation")
    if abs(math.sqrt(sum(v * v for v in q)) - 1) > 1e-3:
        raise ValueError(f"start_rotation {q} is not a unit quaternion [x, y, z, w]")
    return q


def _optional_number(info: dict, key: str) -> float:
    """info[key], NaN when absent or null (save_episodes writes NaN where a distance is unknown)."""
    if info.get(key) is None:
        return math.nan
    number = _number(info[key])
    if number is None:
        raise ValueError(f"info.{key} is {reprlib.repr(info[key])}, expected a number of metres")
    return number


def _number(value) -> float | None:
    """A JSON number as a float; None for anything else (true/false, integers too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None
