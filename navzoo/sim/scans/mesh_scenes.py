"""The meshes of a scenes folder as BatchSim loads them: which ones a training stream draws from, where their
navmeshes are cached, one scene loaded (its mesh in habitat's frame, navmesh and renderer), and whether an
episode's point lies on its floor.
"""

from __future__ import annotations

import glob
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from huggingface_hub import constants

from navzoo.errors import SceneError
from navzoo.sim.config import SimConfig
from navzoo.sim.scans.cache import cached_navmesh
from navzoo.sim.scans.episode_sampler import EpisodeSampler
from navzoo.sim.scans.frame import StageFrame
from navzoo.sim.scans.navmesh import MAX_Y_DELTA, NavMesh, NavmeshConfig
from navzoo.sim.scans.raycast import MeshRenderer, PinholeCamera
from navzoo.sim.scans.stage import SUFFIXES, load_stage

CACHE_ENV = "NAVZOO_NAVMESH_CACHE"
# How far (horizontally) an episode's start or goal may lie from the navmesh: habitat's own navmesh is
# Recast's polygons, whose boundary this 0.05 m grid draws up to two cells apart.
ON_FLOOR_TOLERANCE = 0.1


def navmesh_cache_dir() -> Path:
    """Where navmeshes are cached: $NAVZOO_NAVMESH_CACHE, else HF_HOME/navzoo/navmeshes."""
    return Path(os.environ.get(CACHE_ENV) or Path(constants.HF_HOME) / "navzoo" / "navmeshes")


@dataclass
class MeshScene:
    path: str
    navmesh: NavMesh
    renderer: MeshRenderer | None  # None without cameras
    offset: int  # of its places in the pool's concatenated places
    frame: StageFrame  # how its file was turned into habitat's frame (for messages)
    sampler: EpisodeSampler | None = None  # the stream's episode generator on it


def load_mesh_scene(config: SimConfig, device: torch.device, path: str) -> MeshScene:
    """The mesh at `path` with its navmesh (from the cache, or built and cached) and, where the config has
    cameras, its renderer."""
    cfg = config
    settings = NavmeshConfig(agent_radius=cfg.agent_radius, agent_height=cfg.agent_height)
    camera = PinholeCamera(*cfg.resolution, cfg.hfov, cfg.sensor_height, cfg.min_depth, cfg.max_depth)
    stage = load_stage(path, cfg.scene_dataset)
    navmesh = cached_navmesh(stage, settings, navmesh_cache_dir())
    renderer = None
    if "rgb" in cfg.sensors:
        renderer = MeshRenderer.from_trimesh(list(stage.parts), camera, device)
    elif "depth" in cfg.sensors:  # no colours to read
        renderer = MeshRenderer(stage.vertices, stage.faces, camera, device=device)
    return MeshScene(path, navmesh, renderer, 0, stage.frame)


def scene_paths(config: SimConfig) -> list[str]:
    """The meshes a training stream draws from: the stages the scene dataset config lists (its
    `stages.paths` patterns for mesh files and its `stages.configs` files, relative to the config), else
    every .glb/.gltf/.ply/.obj below scenes_dir; sorted. SceneError when there are none."""
    assert config.scenes_dir is not None
    root = Path(config.scenes_dir)
    if not root.is_dir():
        raise SceneError(f"scenes_dir {root} is not a folder: give the folder of the scene meshes")
    if config.scene_dataset is not None:
        found = _dataset_stages(Path(config.scene_dataset))
        where = f"the stages of {config.scene_dataset}"
    else:
        found = {str(p) for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(SUFFIXES)}
        where = f"{root} (searched for {', '.join(SUFFIXES)} files)"
    if not found:
        raise SceneError(f"no scene mesh in {where}: give a folder of scene meshes")
    return sorted(found)


def _dataset_stages(dataset: Path) -> set[str]:
    try:
        data = json.loads(dataset.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SceneError(f"scene dataset config {dataset} cannot be read ({error}); check the path") from None
    stages = data.get("stages", {}) if isinstance(data, dict) else {}
    stages = stages if isinstance(stages, dict) else {}
    found: set[str] = set()
    paths = stages.get("paths", {})
    for suffix, patterns in paths.items() if isinstance(paths, dict) else []:
        if suffix.lower() in SUFFIXES and isinstance(patterns, list):
            for pattern in patterns:
                found.update(glob.glob(str(dataset.parent / str(pattern)), recursive=True))
    for entry in stages.get("configs", []) or []:
        original = entry.get("original_file") if isinstance(entry, dict) else None
        if isinstance(original, str) and original.lower().endswith(SUFFIXES):
            found.add(str(dataset.parent / original))
    return {path for path in found if Path(path).is_file()}


def on_floor(navmesh: NavMesh, point) -> bool:
    """Whether a habitat position lies on the navmesh, within ON_FLOOR_TOLERANCE."""
    place, snapped = navmesh.project(np.asarray(point, np.float64).reshape(1, 3))
    if place[0] < 0:
        return False
    dx, dy, dz = snapped[0] - np.asarray(point)
    return math.hypot(dx, dz) <= ON_FLOOR_TOLERANCE and abs(dy) <= MAX_Y_DELTA
