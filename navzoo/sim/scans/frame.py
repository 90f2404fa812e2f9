"""Which way a stage mesh is up, chosen as habitat-sim chooses it (docs/design/habitat-sim-rules.md §1).

Sources, in habitat's order: the scene dataset config's `stages.default_attributes` (when the caller names
one), then a per-stage config (`<name>.stage_config.json` beside the mesh, a stage config the dataset's
`paths` register for it, or the dataset's `stages.configs` entry for it). Without a dataset template and
without a stage config, the file kind decides: a `.glb` is z-up with front +Y, anything else is y-up.

Of a stage's attributes only `up`, `front` and `scale` move geometry. `units_to_meters` is parsed and never
applied by habitat-sim, and `origin` is never read; both are ignored here too.
"""

from __future__ import annotations

import glob
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from navzoo.errors import SceneError

Y_UP = (0.0, 1.0, 0.0)
MINUS_Z_FRONT = (0.0, 0.0, -1.0)
GLB_UP = (0.0, 0.0, 1.0)  # habitat assumes an MP3D-style glb: gravity along -Z
GLB_FRONT = (0.0, 1.0, 0.0)


@dataclass(frozen=True)
class StageFrame:
    """How the file's coordinates map to habitat's world (y up, metres): up, front and scale, and where
    they came from (`source`, for messages)."""

    up: tuple[float, float, float]
    front: tuple[float, float, float]
    scale: tuple[float, float, float]
    source: str

    def matrix(self) -> np.ndarray:
        """The 3x3 file-to-world matrix: rows front×up, up, -front (the file's up lands on +Y and its
        front on -Z), after the stage scale."""
        up, front = np.asarray(self.up, dtype=np.float64), np.asarray(self.front, dtype=np.float64)
        up, front = up / np.linalg.norm(up), front / np.linalg.norm(front)
        rotation = np.stack([np.cross(front, up), up, -front])
        return rotation @ np.diag(self.scale)


def stage_config_path(mesh: Path) -> Path:
    """`<name>.stage_config.json` beside the mesh, with up to two extensions stripped (X.basis.glb -> X)."""
    name = mesh.name
    for _ in range(2):
        stem, dot, _ext = name.rpartition(".")
        if dot:
            name = stem
    return mesh.with_name(f"{name}.stage_config.json")


def choose_frame(mesh: Path, dataset_config: str | Path | None = None) -> StageFrame:
    """The frame habitat-sim gives the stage `mesh`, loaded with the scene dataset config `dataset_config`
    (None: habitat's "default" dataset, which has no template)."""
    attributes: dict = {}
    sources: list[str] = []
    stage_config: Path | None = None
    if dataset_config is not None:
        dataset_path = Path(dataset_config)
        dataset = _read_json(dataset_path, "scene dataset config")
        stages = dataset.get("stages", {})
        if isinstance(stages.get("default_attributes"), dict):
            attributes.update(stages["default_attributes"])
            sources.append(f"{dataset_path.name} default_attributes")
        stage_config = _registered_stage_config(mesh, dataset_path.parent, stages)
        entry = _configs_entry(mesh, dataset_path.parent, stages)
        if entry is not None:
            attributes.update(entry)
            sources.append(f"{dataset_path.name} stages.configs")
    beside = stage_config_path(mesh)
    if beside.is_file():
        stage_config = beside
    if stage_config is not None:
        attributes.update(_read_json(stage_config, "stage config"))
        sources.append(stage_config.name)
    elif not sources and mesh.name.lower().endswith(".glb"):
        return StageFrame(GLB_UP, GLB_FRONT, (1.0, 1.0, 1.0), "habitat's default for a bare .glb (z up)")
    up = _vector(attributes.get("up", Y_UP), "up", mesh)
    front = _vector(attributes.get("front", MINUS_Z_FRONT), "front", mesh)
    scale = _vector(attributes.get("scale", (1.0, 1.0, 1.0)), "scale", mesh)
    source = " + ".join(sources) or f"habitat's default for a {mesh.suffix} file (y up)"
    if abs(np.dot(up, front)) > 1e-6 * np.linalg.norm(up) * np.linalg.norm(front) or not (
        np.any(up) and np.any(front)
    ):
        # habitat-sim silently falls back to the y-up frame; say so, since the scene will look tipped over.
        warnings.warn(
            f"{mesh}: up {up} and front {front} from {source} are not orthogonal; habitat-sim ignores them "
            "and uses y up, front -z, and so does navzoo. Fix `up`/`front` in the stage config.",
            stacklevel=3,
        )
        up, front = Y_UP, MINUS_Z_FRONT
    return StageFrame(up, front, scale, source)


def _vector(value, name: str, mesh: Path) -> tuple[float, float, float]:
    try:
        vector = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        vector = ()
    if len(vector) != 3 or not all(np.isfinite(vector)):
        raise SceneError(f"{mesh}: the stage's `{name}` is {value!r}; give three numbers, e.g. [0, 1, 0]")
    return vector  # type: ignore[return-value]


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise SceneError(f"{what} {path} not found: check the path") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SceneError(f"{what} {path} is not readable JSON ({error}); fix or remove it") from None
    if not isinstance(data, dict):
        raise SceneError(f"{what} {path} holds {type(data).__name__}, not a JSON object; fix or remove it")
    return data


def _same_file(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def _registered_stage_config(mesh: Path, root: Path, stages: dict) -> Path | None:
    """A `*.stage_config.json` registered through the dataset's `stages.paths` whose render asset is
    `mesh`."""
    patterns = stages.get("paths", {}).get(".json", [])
    for pattern in patterns if isinstance(patterns, list) else []:
        for found in sorted(glob.glob(str(root / pattern), recursive=True)):
            path = Path(found)
            if not path.name.endswith("stage_config.json"):
                continue
            asset = _read_json(path, "stage config").get("render_asset")
            if isinstance(asset, str) and _same_file(path.parent / asset, mesh):
                return path
    return None


def _configs_entry(mesh: Path, root: Path, stages: dict) -> dict | None:
    """The `attributes` of the dataset's `stages.configs` entry for `mesh`, if it has one."""
    for entry in stages.get("configs", []) or []:
        if not isinstance(entry, dict):
            continue
        original = entry.get("original_file") or entry.get("template_handle")
        if isinstance(original, str) and _same_file(root / original, mesh):
            attributes = entry.get("attributes", {})
            return attributes if isinstance(attributes, dict) else None
    return None
