"""The simulator's big buffers, estimated from its config before BatchSim allocates any of them.

Counted: one batch of observations (what a step returns), the seen_map sensor's per-environment maps, and
the scene pool (navzoo.sim.pool: the padded atlas of its scenes and their distance fields). Left out: the
per-environment scalars (under 100 bytes each), the Explore task's visited cells (1 byte per
`explore_cell_size` square), and the renderer's work buffers during a step (see navzoo.memory).
"""

from __future__ import annotations

from navzoo.memory import Part, refuse_unless_fits
from navzoo.names import CAMERAS, GOAL_SENSOR, SEEN_MAP, SEEN_MAP_CHANNELS
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import ANCHORS_PER_SCENE, Episode
from navzoo.sim.pool import grid_bound, pool_bytes
from navzoo.sim.scenes import scene_family
from navzoo.sim.seen_map import seen_map_bytes
from navzoo.sim.task import lookup_task

_BYTES_PER_VALUE = {"depth": 4, "rgb": 1}  # float32 depth, uint8 colour
_CHANNELS = {"depth": 1, "rgb": 3}


def observation_bytes(config: SimConfig) -> dict[str, int]:
    """One environment's observation from each sensor, in bytes: depth float32 [H, W, 1], rgb uint8
    [H, W, 3], seen_map float32 [S, S, 2], and the goal float32 [2] of a task that has one."""
    height, width = config.resolution
    sizes = {s: height * width * _CHANNELS[s] * _BYTES_PER_VALUE[s] for s in config.sensors if s in CAMERAS}
    if SEEN_MAP in config.sensors:
        sizes[SEEN_MAP] = config.seen_map_size**2 * SEEN_MAP_CHANNELS * 4
    if lookup_task(config.task).has_goal:
        sizes[GOAL_SENSOR] = 2 * 4
    return sizes


def observation_fields(config: SimConfig, prefix: str = "") -> tuple[tuple[str, object], ...]:
    """The fields that size the observations: num_envs, and the cameras' resolution or the map's size."""
    fields: list[tuple[str, object]] = [(f"{prefix}num_envs", config.num_envs)]
    if any(s in CAMERAS for s in config.sensors):
        fields.append((f"{prefix}resolution", list(config.resolution)))
    if SEEN_MAP in config.sensors:
        fields.append((f"{prefix}seen_map_size", config.seen_map_size))
    return tuple(fields)


def describe_observations(config: SimConfig) -> str:
    """The sensors as a message names them, e.g. "depth 64x64" or "goal"."""
    height, width = config.resolution
    parts = [f"{s} {height}x{width}" for s in config.sensors if s in CAMERAS]
    if SEEN_MAP in config.sensors:
        parts.append(f"{SEEN_MAP} {config.seen_map_size}x{config.seen_map_size}")
    return " + ".join(parts) or "goal"


def seen_map_part(config: SimConfig, what: str, prefix: str = "", *, sensor: bool) -> Part:
    """Per-environment seen maps (navzoo.sim.seen_map) over the grid of the config's scene families; the
    `sensor`'s also keep the cells visited (1 byte each)."""
    rows, cols = grid_bound(config.scene_families)
    per_env = seen_map_bytes(rows, cols) + (rows * cols if sensor else 0)
    fields = (
        (f"{prefix}num_envs", config.num_envs),
        (f"{prefix}scene_families", list(config.scene_families)),
    )
    return Part(what, config.num_envs * per_env, fields)


def memory_estimate(config: SimConfig, episodes: list[Episode] | None, prefix: str = "") -> list[Part]:
    """BatchSim's big buffers for `config` and its fixed `episodes` (None: a training stream of scenes);
    `prefix` is how messages name the config's fields ("sim." in a training config)."""
    n = config.num_envs
    parts = [
        Part(
            f"for {describe_observations(config)} observations",
            n * sum(observation_bytes(config).values()),
            observation_fields(config, prefix),
        )
    ]
    # Scanned scenes' navmeshes, meshes and seen maps are sized by the files, known only once loaded: not
    # estimated.
    if config.scenes_dir is None:
        if SEEN_MAP in config.sensors:
            parts.append(seen_map_part(config, "for seen maps", prefix, sensor=True))
        parts.append(_pool_part(config, episodes, prefix))
    return parts


def refuse_unless_sim_fits(config: SimConfig, episodes: list[Episode] | None) -> None:
    """ConfigTooLargeError, naming the SimConfig fields, where BatchSim's buffers cannot fit."""
    refuse_unless_fits(memory_estimate(config, episodes), config.device)


def _pool_part(config: SimConfig, episodes: list[Episode] | None, prefix: str) -> Part:
    if episodes is None:
        slots = config.scenes_in_memory
        rows, cols = grid_bound(config.scene_families)
        nbytes = pool_bytes(slots, slots * ANCHORS_PER_SCENE, rows, cols, stream=True)
        fields = (
            (f"{prefix}scenes_in_memory", slots),
            (f"{prefix}scene_families", list(config.scene_families)),
        )
        return Part(f"for the scene pool ({slots} scenes and their distance fields)", nbytes, fields)
    # Fixed episodes: a slot per scene they name, and at most one distance field per episode. A scene id
    # the pool cannot build is left to the pool to refuse.
    scenes = {ep.scene_id for ep in episodes}
    families = tuple({f for sid in scenes if (f := scene_family(sid)) is not None}) or config.scene_families
    rows, cols = grid_bound(families)
    nbytes = pool_bytes(len(scenes), len(episodes), rows, cols, stream=False)
    source = (
        (f"{prefix}episodes_file", config.episodes_file)
        if config.episodes_file is not None
        else (f"{prefix}episodes_per_scene", config.episodes_per_scene)
    )
    return Part(f"for the scenes of {len(episodes)} episodes", nbytes, (source,))
