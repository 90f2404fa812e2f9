"""Scanned scenes as BatchSim's scene source (SimConfig.scenes_dir): PointGoal episodes of a habitat PointNav
dataset on meshes, with habitat's navmesh rules, sliding motion and pinhole cameras.

Each mesh the episodes name is loaded once (navzoo.sim.scans.stage), with its navmesh (built once and
cached on disk, navzoo.sim.scans.cache) and its Embree renderer (navzoo.sim.scans.raycast). Agents keep
BatchSim's floor coordinates, (x, y) = habitat's (x, -z) with heading = habitat's yaw + pi/2, so the tasks
and GPS+Compass read them as they read the native scenes'; the pool keeps each agent's floor height
(habitat's y). Geodesic distances come from one distance field over the navmesh per distinct goal set.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from huggingface_hub import constants

from navzoo.errors import EpisodeError, NavzooError
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import Episode, MeshEpisode
from navzoo.sim.scans.cache import cached_navmesh
from navzoo.sim.scans.motion import slide
from navzoo.sim.scans.navmesh import NavMesh, NavmeshConfig
from navzoo.sim.scans.raycast import MeshRenderer, PinholeCamera
from navzoo.sim.scans.stage import load_stage

CACHE_ENV = "NAVZOO_NAVMESH_CACHE"
# How far (horizontally) an episode's start or goal may lie from the navmesh: habitat's own navmesh is
# Recast's polygons, whose boundary this 0.05 m grid draws up to two cells apart.
ON_FLOOR_TOLERANCE = 0.1
MAX_Y_DELTA = 0.5  # habitat's is_navigable: the floor within this of the point
COLLISION_EPS = 1e-5  # habitat's: a move is a collision when its squared length falls short by more


def navmesh_cache_dir() -> Path:
    """Where navmeshes are cached: $NAVZOO_NAVMESH_CACHE, else HF_HOME/navzoo/navmeshes."""
    return Path(os.environ.get(CACHE_ENV) or Path(constants.HF_HOME) / "navzoo" / "navmeshes")


@dataclass
class MeshScene:
    path: str
    navmesh: NavMesh
    renderer: MeshRenderer | None  # None without cameras
    offset: int  # of its places in the pool's concatenated places


class MeshScenePool:
    """The scenes of fixed mesh episodes. Like navzoo.sim.pool.ScenePool's fixed pool, it gives BatchSim an
    episode table (`episodes`) and checkpoints; it also moves, renders and measures the agents."""

    fixed = True

    def __init__(self, config: SimConfig, device: torch.device, episodes: list[Episode]):
        self.config, self.device = config, device
        mesh_episodes = [ep for ep in episodes if isinstance(ep, MeshEpisode)]
        if len(mesh_episodes) != len(episodes):
            raise NavzooError("scenes_dir needs episodes read from a file with it (navzoo.sim.load_episodes)")
        paths = list(dict.fromkeys(ep.scene_id for ep in mesh_episodes))
        self.scenes = self._load(paths)
        self.slots_count = len(self.scenes)
        navmeshes = [s.navmesh for s in self.scenes]
        self._grids = (
            np.stack([m.origin for m in navmeshes]),
            np.array([m.shape for m in navmeshes], np.int64),
            np.array([m.cell for m in navmeshes], np.float64),
        )
        self._places = (
            np.concatenate([m.column for m in navmeshes]),
            np.concatenate([m.y for m in navmeshes]),
            np.concatenate(
                [
                    np.where(m.neighbours >= 0, m.neighbours + s.offset, -1)
                    for m, s in zip(navmeshes, self.scenes, strict=True)
                ]
            ).astype(np.int32),
        )
        self._build_table(mesh_episodes, {p: i for i, p in enumerate(paths)})
        self.height = torch.zeros(config.num_envs, dtype=torch.float64)  # each agent's floor (habitat y)

    def _load(self, paths: list[str]) -> list[MeshScene]:
        cfg = self.config
        settings = NavmeshConfig(agent_radius=cfg.agent_radius, agent_height=cfg.agent_height)
        camera = PinholeCamera(*cfg.resolution, cfg.hfov, cfg.sensor_height, cfg.min_depth, cfg.max_depth)
        scenes, offset = [], 0
        for path in paths:
            stage = load_stage(path, cfg.scene_dataset)
            navmesh = cached_navmesh(stage, settings, navmesh_cache_dir())
            renderer = None
            if "rgb" in cfg.sensors:
                renderer = MeshRenderer.from_trimesh(list(stage.parts), camera, self.device)
            elif "depth" in cfg.sensors:  # no colours to read
                renderer = MeshRenderer(stage.vertices, stage.faces, camera, device=self.device)
            scenes.append(MeshScene(path, navmesh, renderer, offset))
            offset += navmesh.size
        return scenes

    # --- episodes ----------------------------------------------------------------------------------------
    def _build_table(self, episodes: list[MeshEpisode], slot_of: dict[str, int]) -> None:
        """The episode table, one distance field per distinct goal set; EpisodeError for an episode whose
        start or goal is off the floor, whose goal cannot be reached, or that is solved at its start."""
        field_of: dict[tuple, int] = {}
        fields: list[np.ndarray] = []
        table: dict[str, list] = {
            "slot": [],
            "start": [],
            "heading": [],
            "goal": [],
            "field": [],
            "height": [],
        }
        for index, ep in enumerate(episodes):
            slot = slot_of[ep.scene_id]
            navmesh = self.scenes[slot].navmesh
            for what, point in [("start", ep.start_position)] + [("goal", g) for g in ep.goal_positions]:
                if not self.on_floor(navmesh, point):
                    raise self._error(index, ep, f"its {what} {list(point)} is not on the navigable floor")
            key = (slot, ep.goal_positions)
            if key not in field_of:
                field_of[key] = len(fields)
                fields.append(navmesh.distance_field(np.asarray(ep.goal_positions)))
            table["slot"].append(slot)
            table["start"].append(ep.start)
            table["heading"].append(ep.heading)
            table["goal"].append(ep.goal)
            table["field"].append(field_of[key])
            table["height"].append(ep.start_position[1])
        self._field_offset = np.cumsum([0] + [len(f) for f in fields])[:-1]
        self._fields = np.concatenate(fields)
        self._start_height = torch.tensor(table.pop("height"), dtype=torch.float64)
        cpu = {
            key: torch.tensor(values, dtype=torch.long if key in ("slot", "field") else torch.float32)
            for key, values in table.items()
        }
        self.episodes = {key: value.to(self.device) for key, value in cpu.items()}
        start = self.geodesic(cpu["slot"], cpu["field"], self._start_height, cpu["start"])
        for index in torch.nonzero(
            ~torch.isfinite(start) | (start <= self.config.success_distance)
        ).flatten():
            ep = episodes[int(index)]
            problem = (
                "its goal cannot be reached from its start on the navmesh"
                if not math.isfinite(float(start[index]))
                else f"its start is {float(start[index]):.3g} m (geodesic) from its goal, within "
                f"success_distance={self.config.success_distance:g} m"
            )
            raise self._error(int(index), ep, problem)

    @staticmethod
    def on_floor(navmesh: NavMesh, point) -> bool:
        """Whether a habitat position lies on the navmesh, within ON_FLOOR_TOLERANCE."""
        place, snapped = navmesh.project(np.asarray(point, np.float64).reshape(1, 3))
        if place[0] < 0:
            return False
        dx, dy, dz = snapped[0] - np.asarray(point)
        return math.hypot(dx, dz) <= ON_FLOOR_TOLERANCE and abs(dy) <= MAX_Y_DELTA

    def _error(self, index: int, ep: MeshEpisode, problem: str) -> EpisodeError:
        return EpisodeError(
            f"episode {index} (episode_id {ep.episode_id!r}) of {self.config.episodes_file} in "
            f"{ep.scene_id}: {problem}; fix or remove the episode"
        )

    def distance_field(self, field: int) -> np.ndarray:
        """float32 [places of its scene]: the geodesic distance field `field` of the episode table."""
        bounds = np.append(self._field_offset, len(self._fields))
        return self._fields[bounds[field] : bounds[field + 1]]

    def start_floor(self, index: int) -> float:
        """The floor height (habitat's y) at the start of episode `index`."""
        return float(self._start_height[index])

    def begin(self, envs: torch.Tensor, index: torch.Tensor) -> None:
        """Episodes `index` start in `envs`: their agents stand at the start's height."""
        self.height[envs.cpu()] = self._start_height[index.cpu()]

    # --- queries -----------------------------------------------------------------------------------------
    def _points(self, points: torch.Tensor, heights: torch.Tensor) -> np.ndarray:
        """Floor points [M, 2] at heights [M] as habitat positions [M, 3]."""
        xy = points.detach().cpu().double().numpy()
        return np.stack([xy[:, 0], heights.cpu().numpy(), -xy[:, 1]], 1)

    def _by_scene(self, slots: torch.Tensor):
        """(slot, its scene, the rows of `slots` in it) for every scene that appears."""
        slots_np = slots.cpu().numpy()
        for slot in np.unique(slots_np):
            yield int(slot), self.scenes[slot], np.flatnonzero(slots_np == slot)

    def geodesic(self, slots, fields, heights, points) -> torch.Tensor:
        """Geodesic distance [M] from floor points [M, 2] (at heights [M]) in scenes `slots` to the goals of
        distance fields `fields`: the best of the point's place and its 8 neighbours, plus the straight hop
        to it; inf off the navmesh."""
        where = self._points(points, heights)
        fields_np = fields.cpu().numpy()
        result = np.full(len(where), np.inf)
        for _, scene, rows in self._by_scene(slots):
            navmesh = scene.navmesh
            place, _ = navmesh.project(where[rows])
            around = _around(navmesh, place)  # [m, 9] local places, -1: none
            centres = navmesh.positions[np.maximum(around, 0)]
            hop = np.hypot(centres[..., 0] - where[rows, None, 0], centres[..., 2] - where[rows, None, 2])
            base = self._field_offset[fields_np[rows]][:, None]
            value = np.where(around >= 0, self._fields[base + np.maximum(around, 0)] + hop, np.inf)
            result[rows] = value.min(1)
        return torch.from_numpy(result).float().to(points.device)

    def is_navigable(self, slots, heights, points) -> torch.Tensor:
        """habitat's is_navigable of floor points [M, 2] at heights [M]: a place in the point's column
        within 0.5 m vertically."""
        where = self._points(points, heights)
        result = np.zeros(len(where), bool)
        for _, scene, rows in self._by_scene(slots):
            result[rows] = scene.navmesh.is_navigable(where[rows])
        return torch.from_numpy(result).to(points.device)

    # --- motion and cameras ------------------------------------------------------------------------------
    def move(self, slots, pos, delta, moving) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """habitat's sliding step of the `moving` agents [N] bool by `delta` [N, 2]; returns (positions
        [N, 2], collided [N], 3D length walked [N]) and updates their heights."""
        n = len(pos)
        new, collided, walked = pos.clone(), torch.zeros(n, dtype=torch.bool), torch.zeros(n)
        movers = torch.nonzero(moving.cpu()).flatten().numpy()
        if len(movers) == 0:
            return new, collided.to(pos.device), walked.to(pos.device)
        start = self._points(pos[movers], self.height[movers])
        end = start.copy()
        end[:, 0] += delta[movers, 0].cpu().double().numpy()
        end[:, 2] -= delta[movers, 1].cpu().double().numpy()
        filtered = start.copy()
        for slot, scene, rows in self._by_scene(slots.cpu()[torch.from_numpy(movers)]):
            navmesh = scene.navmesh
            place, _ = navmesh.project(start[rows])
            end_place, _ = navmesh.project(end[rows])
            # habitat's try_step keeps the agent where it is when either end is off the navmesh or the
            # target is on another island.
            ok = (place >= 0) & (end_place >= 0)
            ok[ok] = navmesh.island[place[ok]] == navmesh.island[end_place[ok]]
            go = rows[ok]
            if len(go) == 0:
                continue
            xz, y, _ = slide(
                np.full(len(go), slot, np.int64),
                place[ok] + scene.offset,
                start[go][:, [0, 2]],
                end[go][:, [0, 2]],
                self._grids,
                self._places,
            )
            filtered[go, 0], filtered[go, 1], filtered[go, 2] = xz[:, 0], y, xz[:, 1]
        moved = np.sum((filtered - start) ** 2, 1)
        wanted = np.sum((end - start) ** 2, 1)
        rows_t = torch.from_numpy(movers)
        new[rows_t] = torch.from_numpy(np.stack([filtered[:, 0], -filtered[:, 2]], 1)).float().to(pos.device)
        collided[rows_t] = torch.from_numpy(moved + COLLISION_EPS < wanted)
        walked[rows_t] = torch.from_numpy(np.sqrt(moved)).float()
        self.height[rows_t] = torch.from_numpy(filtered[:, 1])
        return new, collided.to(pos.device), walked.to(pos.device)

    def observe(self, slots, pos, heading, heights, sensors: tuple[str, ...]) -> dict[str, torch.Tensor]:
        """Depth [M, H, W, 1] and/or RGB [M, H, W, 3] of agents at floor points `pos` [M, 2] and `heights`,
        facing `heading` (BatchSim's: counter-clockwise from +x, habitat's yaw + pi/2)."""
        height, width = self.config.resolution
        m = len(pos)
        out = {
            "depth": torch.zeros(m, height, width, 1, device=self.device),
            "rgb": torch.zeros(m, height, width, 3, dtype=torch.uint8, device=self.device),
        }
        where = self._points(pos, heights)
        yaw = heading.detach().cpu().double().numpy() - math.pi / 2
        for _, scene, rows in self._by_scene(slots):
            assert scene.renderer is not None  # built whenever the config has a camera
            images = scene.renderer.render(where[rows], yaw[rows], sensors)
            for name, image in images.items():
                out[name][torch.from_numpy(rows).to(self.device)] = image
        return {name: out[name] for name in sensors}

    # --- checkpointing -----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "kind": "mesh",
            "scenes": [s.path for s in self.scenes],
            "episodes": len(self.episodes["slot"]),
            "height": self.height.clone(),
        }

    def load_state_dict(self, state: dict) -> None:
        mine = self.state_dict()
        if (
            state.get("kind") != "mesh"
            or state["scenes"] != mine["scenes"]
            or state["episodes"] != mine["episodes"]
        ):
            raise NavzooError(
                "checkpoint was written with other scenes or episodes than this simulator's; resume with the "
                "same episodes_file and scenes_dir"
            )
        self.height = state["height"].clone().double()

    def close(self) -> None:
        """Nothing runs in the background."""


def _around(navmesh: NavMesh, place: np.ndarray) -> np.ndarray:
    """int64 [M, 9]: each place, its 4 linked neighbours and the 4 diagonal places reached through them
    (-1: none, or where `place` is -1)."""
    links = navmesh.neighbours
    here = place.astype(np.int64)
    columns = [here]
    for d in range(4):
        side = np.where(here >= 0, links[np.maximum(here, 0), d], -1).astype(np.int64)
        corner = np.where(side >= 0, links[np.maximum(side, 0), (d + 1) % 4], -1).astype(np.int64)
        columns += [side, corner]
    return np.stack(columns, 1)
