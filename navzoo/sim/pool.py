"""The scenes a simulator holds in memory, stacked into padded tensors that every environment indexes.

Many environments share one scene slot (assets are shared across the batch, as in batch simulation). A
training pool rotates: one slot at a time stops taking new episodes, and once its last episode ends it is
refilled with the next training scene, which a background thread has prepared meanwhile. The retire and
swap points depend only on episode counts, so a run is reproducible whatever the thread's timing, and a
pool's whole state is a few stream indices and counters (`state_dict`).
"""

import math

import numpy as np
import torch

from navzoo.errors import EpisodeError, NavzooError
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import (
    ANCHORS_PER_SCENE,
    STARTS_PER_ANCHOR,
    Episode,
    SceneAssets,
    scene_assets,
    to_habitat_position,
)
from navzoo.sim.materials import material_table
from navzoo.sim.navgrid import NAV_SUBDIVISION
from navzoo.sim.render import SceneAtlas
from navzoo.sim.rotation import SceneRotation
from navzoo.sim.scenes import CELL_SIZE, FAMILIES, SCENES_PER_SPLIT, scene_id, stable_seed
from navzoo.sim.task import lookup_task


def train_scene_id(config: SimConfig, k: int) -> str:
    """The k-th scene of a training run's scene stream."""
    family = config.scene_families[k % len(config.scene_families)]
    index = stable_seed("train-stream", config.seed, k) % SCENES_PER_SPLIT["train"]
    return scene_id(family, "train", index)


def grid_bound(families: tuple[str, ...]) -> tuple[int, int]:
    """(rows, cols) of grid cells that hold any scene of these families: the padded size of a slot."""
    shapes = [FAMILIES[f] for f in families]
    rows = math.ceil(max(f.depth[1] for f in shapes) / CELL_SIZE) + 1
    cols = math.ceil(max(f.width[1] for f in shapes) / CELL_SIZE) + 1
    return rows, cols


def pool_bytes(slots: int, fields: int, rows: int, cols: int, *, stream: bool) -> int:
    """What `ScenePool._allocate` (and a training pool's start cells) take for `slots` scenes of
    rows x cols cells and `fields` distance fields: float32 heights and int64 materials and rooms per cell,
    a float32 field per navigation cell, and int64 (row, col) start cells for each anchor of a stream."""
    atlas = slots * rows * cols * (4 + 8 + 8)
    distance_fields = fields * rows * cols * NAV_SUBDIVISION**2 * 4
    starts = slots * ANCHORS_PER_SCENE * STARTS_PER_ANCHOR * 2 * 8 if stream else 0
    return atlas + distance_fields + starts


def _assets(config: SimConfig, sid: str) -> SceneAssets:
    return scene_assets(sid, config.agent_radius, config.min_geodesic, config.max_geodesic)


class ScenePool:
    def __init__(
        self,
        config: SimConfig,
        device: torch.device,
        episodes: list[Episode] | None,
        *,
        fields_from_start: bool,
    ):
        """`fields_from_start`: the fixed episodes' distance fields are measured from their starts, not from
        their goals (the task's episodes start at the field's source, as Flee's do)."""
        self.config, self.device = config, device
        self.fields_from_start = fields_from_start
        self.cell_size = CELL_SIZE
        self.nav_cell = CELL_SIZE / NAV_SUBDIVISION
        self.materials = {k: torch.from_numpy(v).to(device) for k, v in material_table().items()}
        self.fixed = episodes is not None
        if episodes is None:
            self._init_stream()
        else:
            self._init_fixed(episodes)

    # --- construction ----------------------------------------------------------------------------------
    def _init_stream(self) -> None:
        cfg = self.config
        self.slots_count = cfg.scenes_in_memory
        rows, cols = grid_bound(cfg.scene_families)
        self._allocate(rows, cols, fields=self.slots_count * ANCHORS_PER_SCENE, max_rooms=64)
        self.starts = torch.zeros(
            self.slots_count, ANCHORS_PER_SCENE, STARTS_PER_ANCHOR, 2, dtype=torch.long, device=self.device
        )
        self.anchors_xy = torch.zeros(self.slots_count, ANCHORS_PER_SCENE, 2, device=self.device)
        self.rotation: SceneRotation[SceneAssets] | None = SceneRotation(
            self.slots_count,
            cfg.episodes_per_scene,
            rotating=self.slots_count >= 2,  # the training split's stream never ends
            load=lambda k: _assets(cfg, train_scene_id(cfg, k)),
            fill=lambda slot, _, assets: self._fill(slot, assets),
        )

    def _init_fixed(self, episodes: list[Episode]) -> None:
        cfg = self.config
        scene_ids = list(dict.fromkeys(ep.scene_id for ep in episodes))
        assets = [_assets(cfg, sid) for sid in scene_ids]
        self.slots_count = len(assets)
        slot_of = {sid: i for i, sid in enumerate(scene_ids)}
        # One distance field per distinct source cell: goals for PointGoal, starts for Flee.
        sources: list[dict[tuple[int, int], int]] = [{} for _ in assets]
        fields: list[np.ndarray] = []
        table = {"slot": [], "start": [], "heading": [], "goal": [], "field": []}
        for index, ep in enumerate(episodes):
            slot = slot_of[ep.scene_id]
            a = assets[slot]
            start, goal = (self._standing_cell(a, index, ep, end) for end in ("start", "goal"))
            cell, other = (start, goal) if self.fields_from_start else (goal, start)
            if cell not in sources[slot]:
                sources[slot][cell] = len(fields)
                fields.append(_field_for(a, cell))
            # The field from one end is finite at the other only if a path joins them.
            if not math.isfinite(fields[sources[slot][cell]][other]):
                raise self._episode_error(
                    index, ep, f"its goal cannot be reached from its start in scene {ep.scene_id}"
                )
            table["slot"].append(slot)
            table["start"].append(ep.start)
            table["heading"].append(ep.heading)
            table["goal"].append(ep.goal)
            table["field"].append(sources[slot][cell])
        rows = max(a.scene.shape[0] for a in assets)
        cols = max(a.scene.shape[1] for a in assets)
        max_rooms = max(len(a.scene.wall_materials) for a in assets)
        self._allocate(rows, cols, fields=len(fields), max_rooms=max_rooms)
        for slot, a in enumerate(assets):
            self._write_scene(slot, a)
        for i, field in enumerate(fields):
            self._write_field(i, field)
        self.episodes = {
            "slot": torch.tensor(table["slot"], dtype=torch.long, device=self.device),
            "start": torch.tensor(table["start"], dtype=torch.float32, device=self.device),
            "heading": torch.tensor(table["heading"], dtype=torch.float32, device=self.device),
            "goal": torch.tensor(table["goal"], dtype=torch.float32, device=self.device),
            "field": torch.tensor(table["field"], dtype=torch.long, device=self.device),
        }
        self.rotation = None
        self._refuse_solved_at_start(episodes)

    def _refuse_solved_at_start(self, episodes: list[Episode]) -> None:
        """EpisodeError for the first episode whose start is within success_distance of its goal as the
        simulator measures success (geodesic): a stop before any step would succeed with a shortest path of
        about 0 m, which makes SPL 0/0 when the agent does not move. habitat's generator keeps them at least
        1 m apart (docs/design/habitat-sim-rules.md section 6). Flee and Explore have no goal to reach."""
        if not lookup_task(self.config.task).has_goal:
            return
        table, reach = self.episodes, self.config.success_distance
        far_end = table["goal"] if self.fields_from_start else table["start"]
        geodesic = self.geodesic(table["field"], far_end).cpu()
        near = (geodesic <= reach).nonzero().flatten()
        if len(near):
            index = int(near[0])
            raise self._episode_error(
                index,
                episodes[index],
                f"its start is {float(geodesic[index]):.3g} m (geodesic) from its goal, within "
                f"success_distance={reach:g} m: a stop at the start would succeed",
                fix="move its start at least 1 m (geodesic) from its goal, as habitat's episode generator "
                "does (generated episodes: set min_geodesic above success_distance), or remove the episode",
            )

    def _standing_cell(self, assets: SceneAssets, index: int, ep: Episode, end: str) -> tuple[int, int]:
        """The navigation cell of an episode's "start" or "goal"; EpisodeError unless the agent fits there
        (a start or goal off the map or in a wall would leave its geodesic distance, and SPL, undefined)."""
        nav, (x, y) = assets.nav, getattr(ep, end)
        width, depth = nav.shape[1] * nav.cell_size, nav.shape[0] * nav.cell_size
        where = f"its {end} (x, y) = ({x:g}, {y:g}) m (habitat position {to_habitat_position((x, y))})"
        if not (0 <= x < width and 0 <= y < depth):
            raise self._episode_error(
                index,
                ep,
                f"{where} is off the map of scene {ep.scene_id}, which covers 0 <= x < {width:g} and "
                f"0 <= y < {depth:g} (habitat -{depth:g} < z <= 0)",
            )
        row, col = (int(v) for v in nav.cell_of(np.asarray((x, y))))
        if not nav.free[row, col]:
            raise self._episode_error(
                index,
                ep,
                f"{where} is in or too near a wall or furniture of scene {ep.scene_id}: no room for an "
                f"agent of radius {self.config.agent_radius} m",
            )
        return row, col

    def _episode_error(
        self,
        index: int,
        ep: Episode,
        problem: str,
        fix: str = "move its start and goal onto free floor joined by a path, or remove the episode",
    ) -> EpisodeError:
        file = self.config.episodes_file
        return EpisodeError(
            f"episode {index} (episode_id {ep.episode_id!r}){f' of {file}' if file else ''}: {problem}; {fix}"
        )

    def geodesic(self, field: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
        """Geodesic distance at continuous points [M, 2] in distance fields `field` [M]: the best of the
        3x3 neighbouring cell centres plus the straight hop to it."""
        _, rows, cols = self.fields.shape
        size = self.nav_cell
        row = torch.floor(points[:, 1] / size).long()
        col = torch.floor(points[:, 0] / size).long()
        offsets = torch.arange(-1, 2, device=points.device)
        r = (row[:, None, None] + offsets[None, :, None]).clamp(0, rows - 1)
        c = (col[:, None, None] + offsets[None, None, :]).clamp(0, cols - 1)
        values = self.fields.reshape(-1)[(field[:, None, None] * rows + r) * cols + c]
        hop = torch.hypot(
            (c + 0.5) * size - points[:, 0, None, None], (r + 0.5) * size - points[:, 1, None, None]
        )
        return (values + hop).flatten(1).min(1).values

    def _allocate(self, rows: int, cols: int, fields: int, max_rooms: int) -> None:
        p, dev = self.slots_count, self.device
        self.assets: list[SceneAssets] = []  # of each slot; _write_scene fills them in order
        self.atlas = SceneAtlas(
            heights=torch.full((p, rows, cols), 3.0, device=dev),
            materials=torch.full((p, rows, cols), -1, dtype=torch.long, device=dev),
            rooms=torch.full((p, rows, cols), -1, dtype=torch.long, device=dev),
            wall_materials=torch.zeros(p, max_rooms, dtype=torch.long, device=dev),
            ceiling=torch.full((p,), 3.0, device=dev),
            cell_size=CELL_SIZE,
        )
        self.fields = torch.full(
            (fields, rows * NAV_SUBDIVISION, cols * NAV_SUBDIVISION), math.inf, device=dev
        )
        self.field_max = torch.zeros(fields, device=dev)

    def _write_scene(self, slot: int, assets: SceneAssets) -> None:
        scene, atlas = assets.scene, self.atlas
        rows, cols = scene.shape
        atlas.heights[slot].fill_(scene.ceiling_height)
        atlas.heights[slot, :rows, :cols] = torch.from_numpy(scene.heights)
        atlas.materials[slot].fill_(-1)
        atlas.materials[slot, :rows, :cols] = torch.from_numpy(scene.materials.astype(np.int64))
        atlas.rooms[slot].fill_(-1)
        atlas.rooms[slot, :rows, :cols] = torch.from_numpy(scene.rooms.astype(np.int64))
        atlas.wall_materials[slot].zero_()
        atlas.wall_materials[slot, : len(scene.wall_materials)] = torch.from_numpy(
            scene.wall_materials.astype(np.int64)
        )
        atlas.ceiling[slot] = scene.ceiling_height
        if slot == len(self.assets):  # the slot's first scene: construction fills the slots in order
            self.assets.append(assets)
        else:
            self.assets[slot] = assets

    def _write_field(self, index: int, field: np.ndarray) -> None:
        rows, cols = field.shape
        self.fields[index].fill_(math.inf)
        self.fields[index, :rows, :cols] = torch.from_numpy(field)
        self.field_max[index] = float(field[np.isfinite(field)].max())

    def _fill(self, slot: int, assets: SceneAssets) -> None:
        """Put a training scene in a slot, with exactly ANCHORS_PER_SCENE anchors (repeated if fewer)."""
        self._write_scene(slot, assets)
        picks = np.arange(ANCHORS_PER_SCENE) % len(assets.anchors)
        for a, pick in enumerate(picks):
            self._write_field(slot * ANCHORS_PER_SCENE + a, assets.fields[pick])
        self.starts[slot] = torch.from_numpy(assets.starts[picks]).to(self.device)
        centres = assets.nav.cell_centres(assets.anchors[picks, 0], assets.anchors[picks, 1])
        self.anchors_xy[slot] = torch.from_numpy(centres).float().to(self.device)

    # --- rotation of training scenes -----------------------------------------------------------------
    def active_slots(self) -> torch.Tensor:
        assert self.rotation is not None  # a training stream's pool
        return torch.from_numpy(self.rotation.active_slots()).to(self.device)

    def note_episodes_started(self, count: int, slots_in_use: torch.Tensor) -> None:
        """Advance the rotation of training scenes (navzoo.sim.rotation)."""
        if self.rotation is not None:
            self.rotation.note_episodes_started(count, slots_in_use)

    # --- checkpointing ---------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The pool's position in its scene stream, as plain ints and lists."""
        if self.fixed:
            return {"kind": "fixed", "slots": self.slots_count, "episodes": len(self.episodes["slot"])}
        assert self.rotation is not None  # a training stream's pool
        return {"kind": "stream", **self.rotation.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore `state_dict()` (the rotation's: navzoo.sim.rotation)."""
        mine = self.state_dict()
        if state.get("kind") != mine["kind"]:
            raise NavzooError(
                f"checkpoint holds a {state.get('kind')!r} scene pool, this simulator has a {mine['kind']!r} "
                "one (training scenes are a stream, val/test episodes a fixed list); resume with the same "
                "split and episodes_file"
            )
        if self.fixed:
            if state != mine:
                raise NavzooError(
                    f"checkpoint was written with {state['episodes']} episodes in {state['slots']} scenes, "
                    f"this simulator has {mine['episodes']} in {mine['slots']}; resume with the same split, "
                    "scene_families, episodes_per_scene and episodes_file"
                )
            return
        if len(state["slot_scene"]) != self.slots_count:
            raise NavzooError(
                f"checkpoint was written with scenes_in_memory={len(state['slot_scene'])}, this simulator "
                f"has {self.slots_count}; resume with the same sim config"
            )
        assert self.rotation is not None  # a training stream's pool
        self.rotation.load_state_dict(state)

    def close(self) -> None:
        rotation = getattr(self, "rotation", None)  # absent where __init__ failed before making it
        if rotation is not None:
            rotation.close()


def _field_for(assets: SceneAssets, cell: tuple[int, int]) -> np.ndarray:
    """The distance field from a cell: an anchor's precomputed one, or a fresh Dijkstra."""
    match = np.nonzero((assets.anchors == np.asarray(cell)).all(axis=1))[0]
    return assets.fields[match[0]] if len(match) else assets.nav.distance_field(*cell)
