"""A two-storey scanned scene for the replay tests: tests/sim/scans/meshes.py's stairs mesh in a habitat
scenes folder, and an episodes file whose episodes go down the stairs to the room under the upper floor, and
back up."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from navzoo.sim.episodes import heading_to_quaternion
from tests.sim.scans import meshes

MESH = "house/stairs.ply"  # inside the scenes folder, as the episodes name it
UPPER, GROUND = [9.0, 2.0, 3.0], [8.0, 0.0, 3.0]  # habitat positions: one above the other


def stairs_house(folder: Path) -> dict[str, str]:
    """The scene and its episodes written under `folder`: SimConfig's episodes_file and scenes_dir."""
    scenes = folder / "scene_datasets"
    (scenes / "house").mkdir(parents=True)
    meshes.stairs(0.15, ceiling=True).mesh().export(scenes / MESH)
    episodes = [
        _episode("down", UPPER, GROUND, math.pi),
        _episode("up", GROUND, UPPER, 0.0),
    ]
    episodes_file = folder / "stairs.json.gz"
    with gzip.open(episodes_file, "wt") as f:
        json.dump({"episodes": episodes}, f)
    return {"episodes_file": str(episodes_file), "scenes_dir": str(scenes)}


def _episode(episode_id: str, start: list[float], goal: list[float], heading: float) -> dict:
    return {
        "episode_id": episode_id,
        "scene_id": f"data/scene_datasets/{MESH}",
        "start_position": start,
        "start_rotation": heading_to_quaternion(heading),
        "goals": [{"position": goal}],
    }
