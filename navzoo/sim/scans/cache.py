"""Navmeshes of scanned stages cached on disk, one file per stage and settings.

The file name holds a digest of the mesh file's content, the stage frame that was applied and the navmesh
settings, so a changed mesh, stage config or setting never reads a stale navmesh. Files are written to a
temporary name and renamed (navzoo.storage.atomic), under an OS lock on a lock file beside it
(navzoo.storage.locks), so processes building the same scene at once build it once and never read half a
file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from navzoo.sim.scans.navmesh import NavMesh, NavmeshConfig, build_navmesh
from navzoo.sim.scans.stage import Stage
from navzoo.storage.atomic import removed_on_failure, temporary_path
from navzoo.storage.locks import hold

FORMAT = 1  # bump when the navmesh's arrays or rules change


def cache_key(stage: Stage, config: NavmeshConfig) -> str:
    """A digest of what the navmesh depends on: the mesh's content, its frame and the settings."""
    frame = {"up": stage.frame.up, "front": stage.frame.front, "scale": stage.frame.scale}
    text = json.dumps([FORMAT, stage.content_hash, frame, config.to_dict()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cached_navmesh(
    stage: Stage, config: NavmeshConfig | None = None, cache_dir: str | Path | None = None
) -> NavMesh:
    """The navmesh of `stage`, read from `cache_dir` when built before, else built and written there.
    Without `cache_dir` it is built and not stored."""
    config = config or NavmeshConfig()
    if cache_dir is None:
        return build_navmesh(stage, config)
    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stage.path.name}.{cache_key(stage, config)}.navmesh.npz"
    with hold(path.with_name(path.name + ".lock"), f"the navmesh cache of {stage.path.name}", wait=True):
        navmesh = _read(path)
        if navmesh is None:
            navmesh = build_navmesh(stage, config)
            _write(path, navmesh)
    return navmesh


def _read(path: Path) -> NavMesh | None:
    """The cached navmesh, or None when there is none or it cannot be read (then it is built again)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return NavMesh.from_arrays(arrays)
    except (OSError, ValueError, KeyError):
        return None


def _write(path: Path, navmesh: NavMesh) -> None:
    temporary = temporary_path(path)
    with removed_on_failure(temporary, path):
        with temporary.open("wb") as file:
            arrays: dict[str, Any] = navmesh.arrays()
            np.savez(file, allow_pickle=False, **arrays)
        os.replace(temporary, path)
