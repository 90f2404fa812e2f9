"""Scanned scenes as BatchSim's scene source (SimConfig.scenes_dir): episodes of every task on meshes, with
habitat's navmesh rules, sliding motion and pinhole cameras. The episodes are those of a habitat PointNav
dataset (SimConfig.episodes_file, fixed), or, for training without one, a stream drawn by habitat's PointNav
generator rules (navzoo.sim.scans.episode_sampler) on the meshes of the scenes folder. A task without a goal
(Flee, Explore) takes an episode's start pose and ignores its goal.

Each mesh is loaded once (navzoo.sim.scans.mesh_scenes: the stage, its cached navmesh, its renderer). Agents
keep BatchSim's floor coordinates, (x, y) = habitat's (x, -z) with heading = habitat's yaw + pi/2, as the
tasks and GPS+Compass read the native scenes'; the pool keeps each agent's floor height (habitat's y).
Geodesic distances come from one distance field over the navmesh per distinct goal set, or start for a task
without a goal (fixed episodes), or per environment (the stream, whose Flee episodes start at the sampled
goal, the field's source, as native Flee episodes start at their field's anchor). The start distance that
SPL divides by is habitat's, the taut path's length (navzoo.sim.scans.taut_paths), measured once per
episode.

The stream: every mesh below scenes_dir (or those the scene dataset config lists), in a reproducible
shuffled order, at most scenes_in_memory of them loaded; as navzoo.sim.pool's training pool does, one slot at
a time stops taking episodes after episodes_per_scene starts and, once empty, takes the next mesh. An
environment's k-th episode draws from a numpy generator seeded by (environment seed, k), so with the
rotation counters in `state_dict` a resumed run continues exactly.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from navzoo.errors import NavzooError
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import Episode, MeshEpisode
from navzoo.sim.rotation import SceneRotation
from navzoo.sim.scans.episode_errors import episode_error, off_floor_error
from navzoo.sim.scans.episode_sampler import EpisodeSampler, PointNavRules
from navzoo.sim.scans.mesh_scenes import MeshScene, load_mesh_scene, on_floor, scene_paths
from navzoo.sim.scans.motion import slide
from navzoo.sim.scans.navmesh import largest_finite
from navzoo.sim.scans.taut_paths import GoalSearch
from navzoo.sim.task import lookup_task

COLLISION_EPS = 1e-5  # habitat's: a move is a collision when its squared length falls short by more
# storey_cells' keys pack (storey, row, col): squares count from -CELL_KEY_OFFSET along each axis, with room
# for CELL_KEY_SPAN of them (33,554 km of 1 m squares either way of the origin).
CELL_KEY_OFFSET = 1 << 25
CELL_KEY_SPAN = 1 << 26
# Salts of the stream's seeds: the order of the meshes, and each environment's episodes.
STREAM_SALT, EPISODE_SALT = 0x5CE7E5, 0xE915


class MeshScenePool:
    """The scenes of mesh episodes. With fixed episodes, like navzoo.sim.pool.ScenePool's fixed pool, it gives
    BatchSim an episode table (`episodes`); without (`episodes` None), it draws a training stream
    (`stream_episodes`). It checkpoints, and moves, renders and measures the agents."""

    def __init__(
        self,
        config: SimConfig,
        device: torch.device,
        episodes: list[Episode] | None,
        *,
        fields_from_start: bool,
    ):
        """`fields_from_start`: the stream's episodes start where their distance field is measured from (the
        sampled goal, as Flee's native episodes start at the field's anchor)."""
        self.config, self.device = config, device
        self.fixed = episodes is not None
        self.fields_from_start = fields_from_start
        self.has_goal = lookup_task(config.task).has_goal
        self.height = torch.zeros(config.num_envs, dtype=torch.float64)  # each agent's floor (habitat y)
        # Each episode's habitat geodesic distance at its start, the taut path's (navzoo.sim.scans.taut_paths)
        self.start_distance = torch.zeros(config.num_envs)
        if episodes is None:
            self._init_stream()
            return
        mesh_episodes = [ep for ep in episodes if isinstance(ep, MeshEpisode)]
        if len(mesh_episodes) != len(episodes):
            raise NavzooError("scenes_dir needs episodes read from a file with it (navzoo.sim.load_episodes)")
        paths = list(dict.fromkeys(ep.scene_id for ep in mesh_episodes))
        self.scenes = [load_mesh_scene(self.config, self.device, path) for path in paths]
        self.slots_count = len(self.scenes)
        self._index_scenes()
        self._build_table(mesh_episodes, {p: i for i, p in enumerate(paths)})

    def _index_scenes(self) -> None:
        """Each scene's offset in the concatenated places, and the grids and places `slide` reads."""
        offset = 0
        for scene in self.scenes:
            scene.offset = offset
            offset += scene.navmesh.size
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

    # --- the training stream -----------------------------------------------------------------------------
    def _init_stream(self) -> None:
        cfg = self.config
        self.paths = scene_paths(cfg)
        self.rules = PointNavRules(closest_dist_limit=cfg.min_geodesic, furthest_dist_limit=cfg.max_geodesic)
        self.slots_count = min(cfg.scenes_in_memory, len(self.paths))
        n = cfg.num_envs
        self._env_slot = np.full(n, -1, np.int64)  # the slot and goal place of each env's episode
        self._env_goal = np.full(n, -1, np.int64)
        self._capacity = 0
        self._env_fields = np.zeros((n, 0), np.float32)
        self.field_max = torch.zeros(n, device=self.device)  # of each environment's field (Flee's Max(s_0))
        self.scenes: list[MeshScene] = []
        self.rotation = SceneRotation(
            self.slots_count,
            cfg.episodes_per_scene,
            rotating=len(self.paths) > self.slots_count >= 2,  # a mesh for every slot stays put
            load=self._stream_scene,
            fill=self._fill_slot,
        )

    def _fill_slot(self, slot: int, k: int, scene: MeshScene) -> None:
        if slot == len(self.scenes):  # the slots are first filled in order
            self.scenes.append(scene)
        else:
            self.scenes[slot] = scene
        self._index_scenes()
        self._grow_fields()

    def _stream_path(self, k: int) -> str:
        """The k-th mesh of the stream: the meshes in a fresh shuffled order every len(paths) meshes."""
        epoch, index = divmod(k, len(self.paths))
        order = np.random.default_rng([STREAM_SALT, self.config.seed, epoch]).permutation(len(self.paths))
        return self.paths[int(order[index])]

    def _stream_scene(self, k: int) -> MeshScene:
        scene = load_mesh_scene(self.config, self.device, self._stream_path(k))
        scene.sampler = EpisodeSampler(scene.navmesh, scene.path, self.rules)
        return scene

    def _grow_fields(self) -> None:
        """One distance field per environment, as wide as the largest navmesh loaded; `geodesic` reads them
        as the fixed episodes' concatenated fields (`_fields` at `_field_offset[env]`)."""
        wanted = max(s.navmesh.size for s in self.scenes)
        if wanted > self._capacity:
            grown = np.full((self.config.num_envs, wanted), np.inf, np.float32)
            grown[:, : self._capacity] = self._env_fields
            self._env_fields, self._capacity = grown, wanted
            self._fields = grown.reshape(-1)
            self._field_offset = np.arange(self.config.num_envs, dtype=np.int64) * wanted

    def stream_episodes(self, envs: torch.Tensor, env_seeds: torch.Tensor, counters: torch.Tensor) -> dict:
        """New episodes in `envs`, the k-th (`counters`, before they count this one) of each environment
        drawn from (its seed, k): its slot among the active ones, then habitat's generator on that mesh; it
        starts at the goal with `fields_from_start`. Returns BatchSim's per-env tensors ("slot", "pos",
        "heading", "goal", "field") of `envs`."""
        envs_np = envs.cpu().numpy()
        seeds, ks = env_seeds.cpu().numpy(), counters.cpu().numpy()
        active = self.rotation.active_slots()
        out = {
            "slot": np.zeros(len(envs_np), np.int64),
            "pos": np.zeros((len(envs_np), 2), np.float32),
            "heading": np.zeros(len(envs_np), np.float32),
            "goal": np.zeros((len(envs_np), 2), np.float32),
        }
        for row, env in enumerate(envs_np):  # one Dijkstra per episode, candidates vectorised within it
            rng = np.random.default_rng([EPISODE_SALT, int(seeds[row]), int(ks[row])])
            slot = int(active[rng.integers(len(active))])
            scene = self.scenes[slot]
            assert scene.sampler is not None  # every stream scene has one
            episode, field = scene.sampler.sample(rng)
            self._set_env_field(int(env), field)
            self._env_slot[env], self._env_goal[env] = slot, episode.goal_place
            start = episode.goal if self.fields_from_start else episode.start
            self.height[int(env)] = start[1]
            self.start_distance[int(env)] = episode.geodesic_distance
            out["slot"][row] = slot
            out["pos"][row] = (start[0], -start[2])
            out["goal"][row] = (episode.goal[0], -episode.goal[2])
            out["heading"][row] = math.remainder(episode.yaw + math.pi / 2, 2 * math.pi)
        result = {key: torch.from_numpy(value).to(self.device) for key, value in out.items()}
        result["field"] = envs.to(self.device)
        return result

    def _set_env_field(self, env: int, field: np.ndarray) -> None:
        """Environment `env`'s episode measures distances by `field` [places of its scene]."""
        self._env_fields[env, : len(field)] = field
        self._env_fields[env, len(field) :] = np.inf
        self.field_max[env] = largest_finite(field)

    def note_episodes_started(self, count: int, slots_in_use: torch.Tensor) -> None:
        """Advance the rotation of the stream's meshes (navzoo.sim.rotation)."""
        if not self.fixed:
            self.rotation.note_episodes_started(count, slots_in_use)

    # --- episodes ----------------------------------------------------------------------------------------
    def _build_table(self, episodes: list[MeshEpisode], slot_of: dict[str, int]) -> None:
        """The episode table, one distance field per distinct goal set (per distinct start for a task
        without a goal, which ignores the goals); EpisodeError for an episode whose start, or goal where
        the task has one, is off the floor, whose goal cannot be reached, or that is solved at its start."""
        field_of: dict[tuple, int] = {}
        uses: dict[tuple, list[int]] = {}  # the episodes of each goal set
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
            sources = ep.goal_positions if self.has_goal else (ep.start_position,)
            ends = [("start", ep.start_position)] + [("goal", g) for g in ep.goal_positions if self.has_goal]
            for what, point in ends:
                if not on_floor(navmesh, point):
                    where = f"its {what} {list(point)}"
                    raise off_floor_error(
                        self.config.episodes_file, index, ep, where, episodes, self.scenes[slot]
                    )
            table["slot"].append(slot)
            table["start"].append(ep.start)
            table["heading"].append(ep.heading)
            table["goal"].append(ep.goal)
            table["field"].append(field_of.setdefault((slot, sources), len(field_of)))
            table["height"].append(ep.start_position[1])
            uses.setdefault((slot, sources), []).append(index)
        # One search per distinct goal set: its field, and habitat's geodesic distance of its episodes.
        self._field_sources = list(field_of)
        fields = []
        self._start_distance = np.zeros(len(episodes))
        for slot, sources in field_of:
            navmesh = self.scenes[slot].navmesh
            if not self.has_goal:  # the field alone, from the start
                fields.append(navmesh.distance_field(np.asarray(sources)))
                continue
            search = navmesh.search(np.asarray(sources))
            fields.append(search.field)
            for index in uses[(slot, sources)]:
                self._start_distance[index] = search.distance(episodes[index].start_position)
        self._field_offset = np.cumsum([0] + [len(f) for f in fields])[:-1]
        self._fields = np.concatenate(fields)
        self.field_max = torch.tensor([largest_finite(f) for f in fields], device=self.device)
        self._start_height = torch.tensor(table.pop("height"), dtype=torch.float64)
        cpu = {
            key: torch.tensor(values, dtype=torch.long if key in ("slot", "field") else torch.float32)
            for key, values in table.items()
        }
        self.episodes = {key: value.to(self.device) for key, value in cpu.items()}
        if self.has_goal:
            self._refuse_unreachable_or_solved(episodes, cpu)

    def _refuse_unreachable_or_solved(
        self, episodes: list[MeshEpisode], table: dict[str, torch.Tensor]
    ) -> None:
        """EpisodeError for the first episode whose goal cannot be reached from its start, or whose start is
        within success_distance of it (geodesic)."""
        start = self.geodesic(table["slot"], table["field"], self._start_height, table["start"])
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
            raise episode_error(self.config.episodes_file, int(index), ep, problem)

    def distance_field(self, field: int) -> np.ndarray:
        """float32 [places of its scene]: the geodesic distance field `field` of the episode table (of
        environment `field` in the stream)."""
        if not self.fixed:
            return self._env_fields[field, : self.scenes[self._env_slot[field]].navmesh.size]
        bounds = np.append(self._field_offset, len(self._fields))
        return self._fields[bounds[field] : bounds[field + 1]]

    def field_search(self, field: int) -> GoalSearch:
        """A search from the sources of distance field `field` (as `distance_field` numbers them), for the
        taut shortest path to them."""
        if not self.fixed:
            slot, goal = self._env_slot[field], self._env_goal[field]
            return self.scenes[slot].navmesh.place_searches(np.array([goal]))[0]
        slot, sources = self._field_sources[field]
        return self.scenes[slot].navmesh.search(np.asarray(sources))

    def start_floor(self, index: int) -> float:
        """The floor height (habitat's y) at the start of episode `index`."""
        return float(self._start_height[index])

    def heights_of(self, envs: torch.Tensor | slice) -> torch.Tensor:
        """Floor heights (float64, CPU) of the listed environments: a slice, or indices on any device."""
        return self.height[envs.cpu() if isinstance(envs, torch.Tensor) else envs]

    def begin(self, envs: torch.Tensor, index: torch.Tensor) -> None:
        """Episodes `index` start in `envs`: their agents stand at the start's height."""
        self.height[envs.cpu()] = self._start_height[index.cpu()]
        self.start_distance[envs.cpu()] = torch.from_numpy(self._start_distance[index.cpu().numpy()]).float()

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
            around, hop = navmesh.ways_in(place, where[rows])  # [m, 9] local places, -1: none
            base = self._field_offset[fields_np[rows]][:, None]
            value = np.where(around >= 0, self._fields[base + np.maximum(around, 0)] + hop, np.inf)
            result[rows] = value.min(1)
        return torch.from_numpy(result).float().to(points.device)

    def storey_cells(self, slots, points, heights, cell: float) -> torch.Tensor:
        """int64 [M]: a key of the `cell`-metre square of the floor, and of the storey, where each floor point
        [M, 2] at height [M] in scenes `slots` lies. A point's storey is the rank of its navmesh place in its
        column, lowest first, so floors stacked in one column count apart whatever their spacing."""
        where = self._points(points, heights)
        storey = np.zeros(len(where), np.int64)
        for _, scene, rows in self._by_scene(slots):
            storey[rows] = scene.navmesh.layer_of(scene.navmesh.project(where[rows])[0])
        square = torch.floor(points.detach().cpu().double() / cell).long() + CELL_KEY_OFFSET
        key = (torch.from_numpy(storey) * CELL_KEY_SPAN + square[:, 1]) * CELL_KEY_SPAN + square[:, 0]
        return key.to(points.device)

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
        filtered = self._slide(slots.cpu()[torch.from_numpy(movers)], start, end)
        moved = np.sum((filtered - start) ** 2, 1)
        wanted = np.sum((end - start) ** 2, 1)
        rows_t = torch.from_numpy(movers)
        new[rows_t] = torch.from_numpy(np.stack([filtered[:, 0], -filtered[:, 2]], 1)).float().to(pos.device)
        collided[rows_t] = torch.from_numpy(moved + COLLISION_EPS < wanted)
        walked[rows_t] = torch.from_numpy(np.sqrt(moved)).float()
        self.height[rows_t] = torch.from_numpy(filtered[:, 1])
        return new, collided.to(pos.device), walked.to(pos.device)

    def walks_straight(self, slots, pos, heights, targets) -> torch.Tensor:
        """Whether agents at floor points `pos` [M, 2] (heights [M]) in scenes `slots` would walk straight to
        `targets` [M, 2], not sliding along a wall or a step they cannot climb."""
        start, end = self._points(pos, heights), self._points(targets, heights)
        reached = np.hypot(*(self._slide(slots.cpu(), start, end) - end)[:, [0, 2]].T) < 1e-6
        return torch.from_numpy(reached).to(pos.device)

    def _slide(self, slots: torch.Tensor, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Where habitat's sliding move from habitat points `start` [M, 3] towards `end` ends, [M, 3]."""
        filtered = start.copy()
        for slot, scene, rows in self._by_scene(slots):
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
        return filtered

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
        if not self.fixed:
            return {
                "kind": "mesh-stream",
                "scenes": list(self.paths),
                **self.rotation.state_dict(),
                "env_slot": torch.from_numpy(self._env_slot.copy()),
                "env_goal": torch.from_numpy(self._env_goal.copy()),
                "height": self.height.clone(),
            }
        return {
            "kind": "mesh",
            "scenes": [s.path for s in self.scenes],
            "episodes": len(self.episodes["slot"]),
            "height": self.height.clone(),
        }

    def load_state_dict(self, state: dict) -> None:
        if not self.fixed:
            self._load_stream_state(state)
            return
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

    def _load_stream_state(self, state: dict) -> None:
        """Restore a stream: the slots' meshes, the rotation counters and each episode's distance field."""
        if (
            state.get("kind") != "mesh-stream"
            or state["scenes"] != self.paths
            or len(state["slot_scene"]) != self.slots_count
        ):
            raise NavzooError(
                "checkpoint was written with another scene stream than this simulator's (other meshes in "
                "scenes_dir, another scenes_in_memory, or fixed episodes); resume with the same scenes_dir, "
                "scene_dataset and sim config"
            )
        self.rotation.load_state_dict(state)
        self._env_slot = state["env_slot"].numpy().astype(np.int64).copy()
        self._env_goal = state["env_goal"].numpy().astype(np.int64).copy()
        self._env_fields[:] = np.inf
        self.field_max.zero_()
        for env in np.flatnonzero(self._env_goal >= 0):  # the fields the episodes under way measure
            sampler = self.scenes[self._env_slot[env]].sampler
            assert sampler is not None
            self._set_env_field(int(env), sampler.field(int(self._env_goal[env])))
        self.height = state["height"].clone().double()

    def close(self) -> None:
        """Stop the stream's loading thread (the renderers' cast threads are shared by every mesh)."""
        if not self.fixed:
            self.rotation.close()
