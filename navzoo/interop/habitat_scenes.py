"""navzoo's scenes and episodes as a habitat-sim / habitat-lab scene dataset (`navzoo export-scenes`).

    OUT/scene_datasets/navzoo/navzoo.scene_dataset_config.json    points habitat-sim at the meshes
    OUT/scene_datasets/navzoo/<family>/<split>/<index>.glb        one mesh per scene (navzoo.sim.mesh)
    OUT/datasets/pointnav/navzoo/v1/<split>/<split>.json.gz       the scenes' PointNav episodes

Episodes name their scene as habitat-lab's PointNav datasets do, relative to the scenes folder
(`habitat.dataset.scenes_dir=OUT/scene_datasets`): "navzoo/apartment/val/00002.glb". navzoo reads such a
file back as an episodes_file. The val and test splits export their fixed episodes (those navzoo evaluates
on); train scenes get `episodes_per_scene` freshly generated ones each.

An export into an earlier one adds to it: the split's scenes already there are exported again with the new
ones, so that the split's episodes file covers every mesh of the split, as one export of them all would.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from navzoo.errors import ConfigError
from navzoo.interop.gltf import srgb_to_linear, write_glb
from navzoo.names import SCENE_FAMILIES, SPLITS
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import generate_episodes, save_episodes, scene_assets
from navzoo.sim.materials import MATERIALS
from navzoo.sim.mesh import scene_mesh
from navzoo.sim.scenes import SCENES_PER_SPLIT, generate_scene, parse_scene_id, scene_id

DATASET = "navzoo"
SCENES_FOLDER = Path("scene_datasets") / DATASET
CONFIG_NAME = f"{DATASET}.scene_dataset_config.json"


@dataclass
class ExportSummary:
    out: Path
    scenes: int
    episodes: int
    triangles: int
    bytes: int  # all of OUT
    seconds: float
    kept: int = 0  # scenes of the split that were already in OUT, exported again with the new ones


def export_scenes(
    out: str | Path,
    split: str = "val",
    families: tuple[str, ...] = SCENE_FAMILIES,
    count: int | None = None,
    episodes_per_scene: int = SimConfig.episodes_per_scene,
) -> ExportSummary:
    """Write the first `count` scenes of each family of `split` (all of a val or test split by default)
    and their episodes under `out`, which must be new, empty or an earlier export (which this adds to)."""
    started = time.perf_counter()
    out = Path(out)
    requested = _scene_ids(split, families, count)
    _check_out(out)
    # habitat-sim's config loads every .glb below it and habitat-lab reads one episodes file per split, so
    # an update that rewrote the split's episodes for the new scenes alone would leave meshes without
    # episodes. A habitat user adds scene sets to a dataset folder; so an update adds, and exports the
    # split's earlier scenes again with the new ones (scenes and episodes are deterministic per scene id).
    earlier = _exported_scene_ids(out, split)
    ids = _in_split_order(set(requested) | set(earlier))
    config = SimConfig(split=split, scene_families=tuple(families), episodes_per_scene=episodes_per_scene)
    (out / SCENES_FOLDER).mkdir(parents=True, exist_ok=True)
    triangles, episodes = 0, []
    for sid in ids:
        mesh = scene_mesh(generate_scene(sid))
        triangles += mesh.num_triangles
        primitives = [
            (
                mesh.positions[m],
                mesh.normals[m],
                mesh.triangles[m],
                MATERIALS[m].name,
                srgb_to_linear(MATERIALS[m].color),
            )
            for m in mesh.positions
        ]
        path = out / SCENES_FOLDER / f"{sid}.glb"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_glb(path, primitives, mesh_name=sid)
        assets = scene_assets(sid, config.agent_radius, config.min_geodesic, config.max_geodesic)
        # The same episodes navzoo's val and test sets hold (split_episodes), or fresh ones for train.
        episodes += generate_episodes(assets, config.episodes_per_scene)
    (out / SCENES_FOLDER / CONFIG_NAME).write_text(json.dumps(_dataset_config(), indent=2) + "\n")
    episodes_file = out / "datasets" / "pointnav" / DATASET / "v1" / split / f"{split}.json.gz"
    episodes_file.parent.mkdir(parents=True, exist_ok=True)
    save_episodes(episodes, episodes_file, scene_path=lambda sid: f"{DATASET}/{sid}.glb")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    kept = len(set(earlier) - set(requested))
    return ExportSummary(out, len(ids), len(episodes), triangles, size, time.perf_counter() - started, kept)


def _scene_ids(split: str, families, count: int | None) -> list[str]:
    if split not in SPLITS:
        raise ConfigError("split", split, SPLITS)
    unknown = [f for f in families if f not in SCENE_FAMILIES]
    if unknown or not families:
        raise ConfigError("families", list(families), f"one or more of {', '.join(SCENE_FAMILIES)}")
    available = SCENES_PER_SPLIT[split]
    if count is None and split == "train":
        raise ConfigError("count", None, "a number of scenes per family: the train split has 100,000 of each")
    count = available if count is None else count
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= available:
        raise ConfigError("count", count, f"scenes per family, an integer in 1 .. {available} for {split}")
    # Interleaved across families, in the order of the split's episode set (split_scene_ids).
    return [scene_id(family, split, index) for index in range(count) for family in families]


def _exported_scene_ids(out: Path, split: str) -> list[str]:
    """The scene ids of the split's meshes in an earlier export (none in a new folder)."""
    ids = []
    for path in sorted((out / SCENES_FOLDER).glob(f"*/{split}/*.glb")):
        sid = f"{path.parent.parent.name}/{split}/{path.stem}"
        try:
            canonical = scene_id(*parse_scene_id(sid))
        except ConfigError:
            canonical = None
        if canonical != sid:
            raise ConfigError(
                "out",
                str(out),
                f"a new or empty folder, or an earlier export to update: {path} is not one of navzoo's "
                "scene meshes; remove it",
            )
        ids.append(sid)
    return ids


def _in_split_order(ids) -> list[str]:
    """Interleaved across families, as _scene_ids and split_scene_ids order them."""

    def key(sid: str) -> tuple[int, int]:
        family, _, index = parse_scene_id(sid)
        return index, SCENE_FAMILIES.index(family)

    return sorted(ids, key=key)


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError("out", str(out), "a folder to write the export into; this is a file")
    if out.is_dir() and any(out.iterdir()) and not (out / SCENES_FOLDER / CONFIG_NAME).is_file():
        raise ConfigError(
            "out",
            str(out),
            "a new or empty folder (or an earlier export to update): this one holds other files",
        )


def _dataset_config() -> dict:
    """habitat-sim's scene dataset config: every .glb below it is a stage, y up, in metres."""
    return {
        "stages": {
            "default_attributes": {
                "up": [0.0, 1.0, 0.0],
                "front": [0.0, 0.0, -1.0],
                "units_to_meters": 1.0,
                "requires_lighting": True,
            },
            "paths": {".glb": ["*/*/*.glb"]},
        },
    }
