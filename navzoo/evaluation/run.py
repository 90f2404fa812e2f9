"""Evaluate agents on a split: the library behind `navzoo eval`, `navzoo push`, the demo and the transfer
sweep.

`run` loads the agents (baselines, zoo names, model or run folders, hf-hub:org/name), picks the simulator
each one needs (`sim_config_for`: a model's own cameras, 64x64 depth for baselines), evaluates them on the
same episodes and, given a folder, writes eval.json, a top-down map per agent, replays of the first
episodes and, for a task with a goal, spl_by_distance.png (DD-PPO Fig. 13).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from navzoo.agents.baselines import BASELINES, check_baseline_task, make_baseline
from navzoo.agents.policy_agent import PolicyAgent, check_sim_config, sim_settings
from navzoo.errors import ConfigError, UnknownModelError, closest
from navzoo.evaluation.episodes import EpisodeResult, evaluate
from navzoo.evaluation.replay import SUFFIX, make_replay, save_replay
from navzoo.evaluation.report import episode_map, plot_by_distance, summarize
from navzoo.evaluation.topdown import save_png
from navzoo.models import ActorCritic
from navzoo.names import GOALLESS_BASELINES
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SCENE_FAMILIES, SimConfig
from navzoo.storage.hf_hub import HF_HUB_PREFIX
from navzoo.tasks import get_task
from navzoo.zoo.loader import load

# The shipped depth agent against DD-PPO Table 2's baselines and the oracle; the map-planner (about a second
# per episode on one core) runs when named.
DEFAULT_AGENTS = ("navzoo-pointnav-depth", *(name for name in BASELINES if name != "map-planner"))
BASELINE_SENSORS, BASELINE_RESOLUTION = ("depth",), (64, 64)  # baselines read no images; any camera works
EVAL_FILE = "eval.json"
FIGURE_FILE = "spl_by_distance.png"


@dataclass
class AgentEntry:
    """An entry in the list of agents to evaluate: a baseline (no policy) or a loaded model, under a label
    that names its files."""

    label: str
    source: str
    policy: ActorCritic | None = None


@dataclass
class Evaluation:
    """What `run` measured: the task, each agent's summary and its eval.json entry, and the files written."""

    task: str
    split: str
    episodes: int
    summaries: dict[str, dict]
    report: dict  # eval.json
    files: list[Path] = field(default_factory=list)


def default_agents(task: str) -> tuple[str, ...]:
    """The shipped depth agent and every baseline on a task with a goal; the goal-less baselines otherwise."""
    return DEFAULT_AGENTS if get_task(task).has_goal else GOALLESS_BASELINES


def load_agent(source: str, device: str = "cpu") -> AgentEntry:
    """A baseline by name (it wins over a folder of that name; pass ./name for the folder), or a model
    through navzoo.load."""
    if source in BASELINES:
        return AgentEntry(source, source)
    try:
        policy = load(source, device=device)
    except UnknownModelError as err:
        baselines = ", ".join(BASELINES)
        if close := closest(source, BASELINES):
            raise UnknownModelError(
                f"unknown agent {source!r}: did you mean the baseline {close!r}? The baselines are "
                f"{baselines}; models are zoo names, model or run folders, or hf-hub:org/name"
            ) from None
        raise UnknownModelError(f"{str(err).rstrip('.')}. The baseline agents are {baselines}.") from None
    return AgentEntry(_label(source), source, policy)


def _label(source: str) -> str:
    """A folder's name, a Hub repository's name, or the zoo name."""
    if Path(source).is_dir():
        return Path(source).resolve().name
    return source.removeprefix(HF_HUB_PREFIX).partition("@")[0].rsplit("/", 1)[-1]


def unique_labels(agents: list) -> list:
    """Number repeated labels (run-2, run-3, ...) of agents with a `.label`: labels name output files,
    report entries and the demo's side-by-side columns."""
    seen: set[str] = set()
    for agent in agents:
        base, k = agent.label, 2
        while agent.label in seen:
            agent.label, k = f"{base}-{k}", k + 1
        seen.add(agent.label)
    return agents


def sim_config_for(
    agent: AgentEntry,
    task: str,
    split: str = "val",
    *,
    sensors: tuple[str, ...] | None = None,
    resolution: tuple[int, int] | None = None,
    **sim,
) -> SimConfig:
    """The simulator `agent` runs in: `sensors` / `resolution` where given, else the model's own cameras,
    else 64x64 depth; other SimConfig fields from `sim`. ConfigError if the agent cannot run `task` there."""
    settings = {"sensors": BASELINE_SENSORS, "resolution": BASELINE_RESOLUTION}
    if agent.policy is not None:
        settings.update(sim_settings(agent.policy.config))
    if sensors is not None:
        settings["sensors"] = tuple(sensors)
    if resolution is not None:
        settings["resolution"] = tuple(resolution)
    config = SimConfig(task=task, split=split, **{**settings, **sim})  # `sim` wins; checked below
    if agent.policy is None:
        check_baseline_task(agent.source, task)
    else:
        check_sim_config(agent.policy.config, config, f"model {agent.label!r}", agent.policy.task)
    return config


def run(
    agents: Sequence[str | AgentEntry] = (),
    *,
    task: str | None = None,
    split: str = "val",
    episodes: int = 96,
    mode: str = "sampled",
    out: str | Path | None = None,
    replays: int = 3,
    map_episode: int = 0,
    sensors: tuple[str, ...] | None = None,
    resolution: tuple[int, int] | None = None,
    num_envs: int = 16,
    families: tuple[str, ...] = SCENE_FAMILIES,
    episodes_file: str | None = None,
    scenes_dir: str | None = None,
    scene_dataset: str | None = None,
    device: str = "cpu",
    seed: int = 0,
    progress: bool = True,
) -> Evaluation:
    """Evaluate `agents` (names or Agents; default: those of `default_agents`) on the first `episodes` of a
    split, actions `mode` ("sampled" or "deterministic"). `task` defaults to the first model's task
    (PointGoal for baselines). With `out`, write eval.json, maps (episode `map_episode`), replays of the
    first `replays` episodes and, for a task with a goal, spl_by_distance.png there. With `scenes_dir`, the
    episodes file's scenes are scanned meshes (SimConfig.scenes_dir), oriented by `scene_dataset`."""
    _check_counts(episodes, replays, map_episode)
    sources = list(agents) or list(default_agents(task or "pointnav"))
    loaded = unique_labels([a if isinstance(a, AgentEntry) else load_agent(a, device) for a in sources])
    task = task or next((a.policy.task for a in loaded if a.policy is not None), "pointnav")
    shared = {"num_envs": num_envs, "scene_families": tuple(families), "episodes_file": episodes_file}
    shared |= {"scenes_dir": scenes_dir, "scene_dataset": scene_dataset, "device": device, "seed": seed}
    # Every mismatch of task, cameras or resolution is reported before anything runs.
    cameras = {"sensors": sensors, "resolution": resolution}
    configs = [sim_config_for(agent, task, split, **cameras, **shared) for agent in loaded]
    if progress:
        print(f"{get_task(task).label}, split {split}, {episodes} episodes", flush=True)
    out = Path(out) if out is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    settings = {
        "agents": [a.source if isinstance(a, AgentEntry) else a for a in sources],
        "task": task,
        "split": split,
        "episodes": episodes,
        "mode": mode,
        "sensors": list(sensors) if sensors is not None else None,
        "resolution": list(resolution) if resolution is not None else None,
        **{k: list(v) if isinstance(v, tuple) else v for k, v in shared.items()},
        "threads": torch.get_num_threads(),
    }
    evaluation = Evaluation(task, split, episodes, {}, {"config": settings, "agents": {}})
    sims: dict[SimConfig, BatchSim] = {}  # one simulator per distinct cameras
    try:
        for agent, config in zip(loaded, configs, strict=True):
            if config not in sims:
                sims[config] = BatchSim(config)
            summary, entry = evaluate_agent(
                agent, sims[config], episodes, mode, seed, out, replays, map_episode, progress
            )
            evaluation.summaries[agent.label], evaluation.report["agents"][agent.label] = summary, entry
    finally:
        for sim in sims.values():
            sim.close()
    if out is not None:
        (out / EVAL_FILE).write_text(json.dumps(_json_safe(evaluation.report), indent=2))
        evaluation.files.append(out / EVAL_FILE)
        if get_task(task).has_goal:  # only a task with a goal has a goal distance to break results down by
            evaluation.files.append(plot_by_distance(evaluation.summaries, out / FIGURE_FILE))
    return evaluation


def evaluate_agent(
    agent: AgentEntry,
    sim: BatchSim,
    episodes: int,
    mode: str = "sampled",
    seed: int = 0,
    out: Path | None = None,
    replays: int = 0,
    map_episode: int = 0,
    progress: bool = False,
) -> tuple[dict, dict]:
    """Evaluate one agent; with `out`, write its map and replays. Returns its summary and its report entry."""
    model, action_mode = None, None
    if agent.policy is None:
        runner = make_baseline(agent.source, sim, seed=seed)
    else:
        runner = PolicyAgent(agent.policy, sim.num_envs, deterministic=mode == "deterministic", seed=seed)
        model, action_mode = runner.describe(), runner.mode
    config = sim.config
    if progress:
        cameras = "+".join(config.sensors) or "blind"
        size = f"{config.resolution[0]}x{config.resolution[1]} "
        print(f"{agent.label}: {size}{cameras}" + (f", {action_mode}" if action_mode else ""), flush=True)
    results = evaluate(sim, runner, episodes, progress=progress)
    entry = {
        "source": agent.source,
        "model": model,
        "action_mode": action_mode,
        "sim": {"sensors": list(config.sensors), "resolution": list(config.resolution)},
        "summary": summarize(results),
        "map": None,
        "replays": [],
        "episodes": [r.metrics() for r in results],
    }
    if out is not None:
        save_png(episode_map(sim, results[map_episode]), out / f"map-{agent.label}.png")
        entry["map"] = f"map-{agent.label}.png"
        entry["replays"] = [
            _save_replay(sim, result, agent.label, model, action_mode, out) for result in results[:replays]
        ]
    return entry["summary"], entry


def _check_counts(episodes: int, replays: int, map_episode: int) -> None:
    if episodes < 1:
        raise ConfigError("episodes", episodes, "1 or more")
    if replays < 0:
        raise ConfigError("replays", replays, "0 or more episodes per agent")
    if not 0 <= map_episode < episodes:
        raise ConfigError("map_episode", map_episode, f"an episode in 0 .. {episodes - 1}")


def _save_replay(sim: BatchSim, result: EpisodeResult, label: str, model, mode, out: Path) -> str:
    path = out / "replays" / label / f"episode-{result.episode_index}{SUFFIX}"
    save_replay(path, make_replay(sim, result, label, model, mode))
    return str(path.relative_to(out))


def _json_safe(value):
    """NaN and Infinity are not JSON: an undefined interval or an open-ended distance bin becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
