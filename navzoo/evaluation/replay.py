"""Replays: saved evaluation episodes that can be watched again, frame by frame.

One episode per gzip-compressed JSON file (``.replay.json.gz``). A replay holds the simulator config and
the episode, so the scene can be rebuilt and any frame re-rendered; the pose after every step (index 0 is
the start), the actions, rewards and, for learned policies, value estimates and action probabilities; and
the episode's metrics. Layout (format_version 2)::

    format, format_version, navzoo_version, agent, model (null for baselines), action_mode (null for
    baselines), sim_config (SimConfig fields), episode_index, episode (navzoo.sim.Episode fields; on
    scanned meshes MeshEpisode's, its scene_id relative to sim_config.scenes_dir),
    trajectory: {positions [T+1][2], headings [T+1], heights [T+1] (scanned meshes only), actions [T],
                 rewards [T], values [T] or null, action_probs [T][A] or null},
    metrics (EpisodeResult.metrics())

Version 1 is the same without the scanned meshes' fields; replays of navzoo's own scenes are still written
as version 1, so older navzoo reads them.

A replay of a scanned-mesh episode (SimConfig.scenes_dir) keeps its 3D start and goals (habitat's y-up
frame) and the floor height under every pose (habitat's y), which tells a building's storeys apart. It
names its mesh inside the scenes folder (habitat's data/scene_datasets), so it opens on any machine that
has that folder: where the folder lies elsewhere, say where (`load_replay(..., scenes_dir=...)`,
`relocate_replay`). The mesh is read when the replay is opened to be watched (`replay_sim`: ReplayView and
`render_replay`), and a missing one is named there.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from navzoo import __version__
from navzoo.errors import ConfigError, ReplayError
from navzoo.evaluation.episodes import EpisodeResult, fixed_episodes
from navzoo.names import CAMERAS
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import Episode, MeshEpisode, mesh_path
from navzoo.storage.bounded import read_bounded

FORMAT = "navzoo-replay"
FORMAT_VERSION = 2  # the newest layout, which scanned-mesh replays need
GRID_VERSION = 1  # replays of navzoo's own scenes: version 2 adds nothing to them
SUFFIX = ".replay.json.gz"
# The most JSON `load_replay` decompresses by default: a 500-step replay of a learned policy is about
# 100 KB, so this holds episodes of 100,000s of steps, and a gzip bomb stops here.
MAX_BYTES = 64 << 20
_TRAJECTORY = ("positions", "headings", "actions", "rewards", "values", "action_probs")  # in every version
RENDER_BATCH = 64  # frames rendered per simulator call: bounds memory for long episodes at high resolution


@dataclass
class Replay:
    agent: str  # the label the agent had in the evaluation
    model: dict | None  # name, task, architecture and provenance of a learned policy; None for a baseline
    action_mode: str | None  # "sampled" or "deterministic" for a learned policy
    sim_config: SimConfig  # for one CPU environment; rebuild the scene with BatchSim(sim_config, [episode])
    episode_index: int
    episode: Episode
    positions: np.ndarray  # [T + 1, 2] float32, the pose after each step; index 0 is the start
    headings: np.ndarray  # [T + 1] float32
    actions: np.ndarray  # [T] int64
    rewards: np.ndarray  # [T] float32
    values: np.ndarray | None  # [T] float32, the value estimate before each action
    action_probs: np.ndarray | None  # [T, A] float32
    metrics: dict
    # [T + 1] float64, the floor height (habitat's y) under each pose on scanned meshes; None in navzoo's
    # own one-storey scenes
    heights: np.ndarray | None = None

    @property
    def num_steps(self) -> int:
        return len(self.actions)

    @property
    def on_meshes(self) -> bool:
        """Whether the episode ran on a scanned mesh (SimConfig.scenes_dir)."""
        return self.sim_config.scenes_dir is not None

    @property
    def scene_name(self) -> str:
        """The episode's scene as its episodes file names it: a navzoo scene id, or a mesh's path inside
        the scenes folder."""
        if self.sim_config.scenes_dir is None:
            return self.episode.scene_id
        return self.episode.scene_id.removeprefix(os.path.join(self.sim_config.scenes_dir, ""))


def make_replay(
    sim: BatchSim,
    result: EpisodeResult,
    agent: str,
    model: dict | None = None,
    action_mode: str | None = None,
) -> Replay:
    """A replay of an episode `evaluate` ran in `sim`."""
    # The episode travels with the replay, so no episodes file is needed; a replay recorded on a GPU
    # re-renders on any machine's CPU.
    config = sim.config.replace(num_envs=1, device="cpu", compile=False, episodes_file=None)
    return Replay(
        agent=agent,
        model=model,
        action_mode=action_mode,
        sim_config=config,
        episode_index=result.episode_index,
        episode=fixed_episodes(sim)[result.episode_index],
        positions=result.positions,
        headings=result.headings,
        actions=result.actions,
        rewards=result.rewards,
        values=result.values,
        action_probs=result.action_probs,
        metrics=result.metrics(),
        heights=result.heights,
    )


def relocate_replay(
    replay: Replay,
    scenes_dir: str | Path | None = None,
    scene_dataset: str | Path | None = None,
    name: str = "the replay",
) -> Replay:
    """`replay` with its scanned mesh looked for in `scenes_dir`, where the scenes folder it was recorded
    with is on this machine, and, if it was recorded with a scene dataset config, that config at
    `scene_dataset` (None: where the replay was recorded). Replays of navzoo's own scenes come back as they
    are. ReplayError if the mesh was not inside the recorded scenes folder. `name` is how messages call it."""
    config = replay.sim_config
    if config.scenes_dir is None:
        return replay
    mesh = replay.scene_name
    if scenes_dir is not None and (
        os.path.isabs(mesh) or Path(os.path.normpath(mesh)).parts[:1] == (os.pardir,)
    ):
        raise ReplayError(
            f"{name} was recorded on the mesh {mesh}, outside its scenes folder {config.scenes_dir}, so it "
            f"cannot be looked for in {scenes_dir}: open it on a machine that has {mesh}"
        )
    scenes_dir = config.scenes_dir if scenes_dir is None else str(scenes_dir)
    dataset = config.scene_dataset
    if dataset is not None and scene_dataset is not None:
        dataset = str(scene_dataset)
    episode = dataclasses.replace(replay.episode, scene_id=mesh_path(mesh, scenes_dir))
    moved = config.replace(scenes_dir=scenes_dir, scene_dataset=dataset)
    return dataclasses.replace(replay, sim_config=moved, episode=episode)


def save_replay(path: str | Path, replay: Replay) -> Path:
    """Write `replay` as gzip JSON; `path` should end in .replay.json.gz."""
    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION if replay.on_meshes else GRID_VERSION,
        "navzoo_version": __version__,
        "agent": replay.agent,
        "model": replay.model,
        "action_mode": replay.action_mode,
        "sim_config": dataclasses.asdict(replay.sim_config),
        "episode_index": replay.episode_index,
        "episode": {**dataclasses.asdict(replay.episode), "scene_id": replay.scene_name},
        "trajectory": {
            # tolist() gives exact float64 copies of the float32 values, so poses load back bit for bit.
            name: None if getattr(replay, name) is None else np.asarray(getattr(replay, name)).tolist()
            for name in _TRAJECTORY + (("heights",) if replay.on_meshes else ())
        },
        "metrics": replay.metrics,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def load_replay(
    path: str | Path,
    *,
    name: str | None = None,
    max_bytes: int = MAX_BYTES,
    max_steps: int | None = None,
    max_resolution: int | None = None,
    scenes_dir: str | Path | None = None,
    scene_dataset: str | Path | None = None,
) -> Replay:
    """Read a replay file; ReplayError if it is missing, damaged, not a replay, from a newer navzoo, or past
    a bound: more than `max_bytes` of JSON, more than `max_steps` steps, cameras larger than
    `max_resolution` per side. The bounds are checked before any array or scene is built. `name` is how
    messages call the file (default: its path). A replay on scanned meshes looks for them in `scenes_dir`
    and `scene_dataset` where given (relocate_replay), else where it was recorded."""
    path = Path(path)
    name = str(path) if name is None else name
    if not path.is_file():
        raise ReplayError(
            f"replay file {name} does not exist; an evaluation that saves replays (navzoo.evaluation.run "
            "with out and replays, as `navzoo eval` does) writes them to <out>/replays/<agent>/"
        )
    data = _read_json(path, name, max_bytes)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ReplayError(f"{name} is not a navzoo replay (format {found!r}, expected {FORMAT!r})")
    version = data.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ReplayError(
            f"{name} has replay format_version {version!r}, newer than this navzoo reads ({FORMAT_VERSION}); "
            "upgrade navzoo (pip install -U navzoo)"
        )
    try:
        steps, config = len(data["trajectory"]["actions"]), SimConfig.from_dict(data["sim_config"])
    except (KeyError, TypeError, ValueError) as err:  # ConfigError is a ValueError
        raise _damaged(name, err) from None
    _check_bounds(name, steps, config, max_steps, max_resolution)
    try:
        replay = _replay_from_dict(data, config)
    except (KeyError, TypeError, ValueError) as err:
        raise _damaged(name, err) from None
    if scenes_dir is None and scene_dataset is None:
        return replay
    return relocate_replay(replay, scenes_dir, scene_dataset, name)


def _read_json(path: Path, name: str, max_bytes: int):
    """The file's JSON, decompressing at most `max_bytes` (a few kilobytes of gzip can inflate to
    gigabytes)."""
    reason = "(a 500-step replay is about 100 KB): it is not a replay navzoo wrote"
    try:
        raw = read_bounded(path, max_bytes, name, reason, gzipped=True, error=ReplayError)
    except (OSError, EOFError, zlib.error) as err:
        raise _not_json(name, err) from None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:  # RecursionError: nested too deep
        raise _not_json(name, err) from None


def _check_bounds(
    name: str, steps: int, config: SimConfig, max_steps: int | None, max_resolution: int | None
) -> None:
    if max_steps is not None and steps > max_steps:
        raise ReplayError(
            f"{name} has {steps} steps; at most {max_steps} are shown here (max_steps): watch longer "
            "episodes with navzoo.evaluation.replay_view.ReplayView in Python"
        )
    height, width = config.resolution
    if max_resolution is not None and config.sensors and max(height, width) > max_resolution:
        raise ReplayError(
            f"{name} has {height}x{width} cameras; at most {max_resolution}x{max_resolution} are re-rendered "
            "here (max_resolution): watch it with navzoo.evaluation.replay_view.ReplayView in Python"
        )


def _not_json(name: str, err: Exception) -> ReplayError:
    return ReplayError(
        f"{name} is not a gzip-compressed JSON replay ({err}); it may be truncated or another kind of "
        "file: evaluate again, saving replays, to rewrite it"
    )


def _damaged(name: str, err: Exception) -> ReplayError:
    return ReplayError(
        f"{name} is a damaged replay ({type(err).__name__}: {err}); evaluate again, saving replays, to "
        "rewrite it"
    )


def _replay_from_dict(data: dict, config: SimConfig) -> Replay:
    trajectory = data["trajectory"]

    def array(name: str, dtype) -> np.ndarray:
        value = trajectory[name]
        if value is None:
            raise ValueError(f"trajectory {name} is null")
        return np.asarray(value, dtype=dtype)

    def optional_array(name: str, dtype) -> np.ndarray | None:  # values and action_probs
        return None if trajectory[name] is None else array(name, dtype)

    replay = Replay(
        agent=str(data["agent"]),
        model=data["model"],
        action_mode=data["action_mode"],
        sim_config=config,
        episode_index=int(data["episode_index"]),
        episode=_episode(data["episode"], config),
        positions=array("positions", np.float32),
        headings=array("headings", np.float32),
        actions=array("actions", np.int64),
        rewards=array("rewards", np.float32),
        values=optional_array("values", np.float32),
        action_probs=optional_array("action_probs", np.float32),
        metrics=dict(data["metrics"]),
        heights=array("heights", np.float64) if config.scenes_dir is not None else None,
    )
    _check_shapes(replay)
    return replay


def _episode(data: dict, config: SimConfig) -> Episode:
    """The replay's Episode, or on scanned meshes its MeshEpisode, whose mesh is in config.scenes_dir."""
    fields = {**data, "start": tuple(data["start"]), "goal": tuple(data["goal"])}
    if config.scenes_dir is None:
        return Episode(**fields)
    return MeshEpisode(
        **{
            **fields,
            "scene_id": mesh_path(data["scene_id"], config.scenes_dir),
            "dataset_scene_id": data.get("dataset_scene_id", data["scene_id"]),
            "start_position": _point(data["start_position"]),
            "goal_positions": tuple(_point(goal) for goal in data["goal_positions"]),
        }
    )


def _point(value) -> tuple[float, float, float]:
    x, y, z = (float(v) for v in value)
    return x, y, z


def _check_shapes(replay: Replay) -> None:
    steps = replay.num_steps
    expected = {
        "positions": (steps + 1, 2),
        "headings": (steps + 1,),
        "heights": (steps + 1,),
        "actions": (steps,),
        "rewards": (steps,),
        "values": (steps,),
    }
    if replay.action_probs is not None:
        expected["action_probs"] = (steps, replay.action_probs.shape[-1])
    for name, shape in expected.items():
        value = getattr(replay, name)
        if value is not None and value.shape != shape:
            raise ValueError(f"trajectory {name} has shape {value.shape}, expected {shape} for {steps} steps")


def check_scene_files(replay: Replay) -> None:
    """ReplayError, naming the file and the fix, if the scanned mesh or the scene dataset config the replay
    was recorded with is not where it looks for them on this machine."""
    config = replay.sim_config
    if config.scenes_dir is None:
        return
    needs = f"the replay of {replay.agent} on episode {replay.episode.episode_id!r} needs"
    if not os.path.isfile(replay.episode.scene_id):
        raise ReplayError(
            f"{needs} the scanned mesh {replay.episode.scene_id} ({replay.scene_name} in scenes_dir "
            f"{config.scenes_dir}), which does not exist: copy the scenes folder it was recorded with there, "
            "or open the replay with scenes_dir set to where that folder is on this machine "
            "(load_replay(path, scenes_dir=...), `navzoo demo --scenes-dir DIR`)"
        )
    if config.scene_dataset is not None and not os.path.isfile(config.scene_dataset):
        raise ReplayError(
            f"{needs} the scene dataset config {config.scene_dataset}, which orients its mesh and does not "
            "exist: copy it there, or open the replay with scene_dataset set to where it is on this machine "
            "(load_replay(path, scene_dataset=...), `navzoo demo --scene-dataset FILE`)"
        )


def replay_sim(replay: Replay, num_envs: int = 1, device: str = "cpu") -> BatchSim:
    """A simulator of `num_envs` environments that each start the replay's episode (its scene, goal and
    distance field), with the replay's cameras: `observe_steps` shows its poses. ReplayError if its scanned
    mesh is missing (check_scene_files)."""
    check_scene_files(replay)
    # The cameras alone: a seen_map is a memory of the steps before, which a pose set by hand does not have.
    cameras = tuple(s for s in replay.sim_config.sensors if s in CAMERAS)
    config = replay.sim_config.replace(num_envs=num_envs, device=device, sensors=cameras)
    sim = BatchSim(config, episodes=[replay.episode])
    sim.reset()
    return sim


def observe_steps(sim: BatchSim, replay: Replay, steps: list[int]) -> dict[str, torch.Tensor]:
    """The observations of `sim` (a `replay_sim` with at least len(steps) environments) at the replay's
    poses at `steps`, on scanned meshes each on its own floor."""
    envs = torch.arange(len(steps), device=sim.device)
    sim.pos[envs] = torch.as_tensor(replay.positions[steps], device=sim.device)
    sim.heading[envs] = torch.as_tensor(replay.headings[steps], device=sim.device)
    if sim.meshes is not None:
        if replay.heights is None:
            raise ReplayError(
                "a replay on scanned meshes needs the floor height of every pose (Replay.heights, which "
                "make_replay takes from evaluate's EpisodeResult): make the replay from an evaluation"
            )
        sim.meshes.height[envs.cpu()] = torch.as_tensor(replay.heights[steps])
    return sim.observe(envs)


def render_replay(replay: Replay, steps=None, device: str = "cpu") -> dict[str, torch.Tensor]:
    """Re-render the observations at the given steps (default: all T + 1 poses), stacked as [K, ...].

    Step t is what the agent saw before its t-th action (step T: where the episode ended).
    """
    steps = list(range(replay.num_steps + 1)) if steps is None else [int(s) for s in steps]
    if not steps:
        raise ConfigError("steps", steps, "at least one step to render")
    for step in steps:
        if not 0 <= step <= replay.num_steps:
            raise ConfigError("step", step, f"0 .. {replay.num_steps} (the replay's poses)")
    batch = min(len(steps), RENDER_BATCH)
    sim = replay_sim(replay, batch, device)
    try:
        chunks = [
            observe_steps(sim, replay, steps[begin : begin + batch]) for begin in range(0, len(steps), batch)
        ]
    finally:
        sim.close()
    return {key: torch.cat([chunk[key] for chunk in chunks]) for key in chunks[0]}


def render_replay_frame(replay: Replay, step: int, device: str = "cpu") -> dict[str, torch.Tensor]:
    """The observations at one step (no batch dimension)."""
    return {key: value[0] for key, value in render_replay(replay, [step], device).items()}
