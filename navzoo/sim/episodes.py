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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from navzoo.errors import EpisodeError
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import Scene, generate_scene, split_scene_ids, stable_seed

ANCHORS_PER_SCENE = 12
STARTS_PER_ANCHOR = 256
MIN_RATIO = 1.1  # geodesic / euclidean below this is an "easy" episode
EASY_KEEP_PROBABILITY = 0.1


@dataclass(frozen=True)
class Episode:
    episode_id: str
    scene_id: str
    start: tuple[float, float]  # metres, scene frame
    heading: float  # radians, counter-clockwise from +x
    goal: tuple[float, float]
    geodesic_distance: float
    euclidean_distance: float


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
    """The fixed episodes a SimConfig runs: its episodes_file, else its val or test set; None for train."""
    if config.episodes_file is not None:
        return load_episodes(config.episodes_file)
    if config.split == "train":
        return None
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


def save_episodes(episodes: list[Episode], path: str | Path) -> None:
    """Write episodes as a habitat-lab PointNav dataset (.json or .json.gz)."""
    data = {
        "episodes": [
            {
                "episode_id": ep.episode_id,
                "scene_id": ep.scene_id,
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


def load_episodes(path: str | Path) -> list[Episode]:
    """Read a habitat-lab PointNav dataset (.json or .json.gz) whose scene ids are navzoo scene ids."""
    path = Path(path)
    if not path.is_file():
        raise EpisodeError(f"episode file {path} does not exist; write one with navzoo.sim.save_episodes")
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            data = json.load(f)
        episodes = [
            Episode(
                episode_id=str(raw["episode_id"]),
                scene_id=raw["scene_id"],
                start=from_habitat_position(raw["start_position"]),
                heading=quaternion_to_heading(raw["start_rotation"]),
                goal=from_habitat_position(raw["goals"][0]["position"]),
                geodesic_distance=float(raw.get("info", {}).get("geodesic_distance", math.nan)),
                euclidean_distance=float(raw.get("info", {}).get("euclidean_distance", math.nan)),
            )
            for raw in data["episodes"]
        ]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise EpisodeError(
            f"episode file {path} is not a habitat PointNav dataset ({exc!r}); expected "
            '{"episodes": [{"episode_id", "scene_id", "start_position", "start_rotation", '
            '"goals": [{"position"}]}, ...]}'
        ) from exc
    if not episodes:
        raise EpisodeError(f"episode file {path} holds no episodes")
    return episodes
