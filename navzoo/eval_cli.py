"""`navzoo eval`: baselines and trained models on a split's fixed episodes of PointGoal (Success / SPL),
Flee (D_T) or Explore (visited cells).

Prints a table (for PointGoal also by geodesic distance) and writes to OUT: eval.json, a top-down map per
agent (map-<agent>.png), replays of the first episodes (replays/<agent>/episode-<index>.replay.json.gz, see
navzoo.replay) and for PointGoal spl_by_distance.png (DD-PPO Fig. 13).
"""

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from navzoo.baselines import BASELINES, GOAL_BASELINES, check_baseline_task, make_baseline
from navzoo.errors import ConfigError, UnknownModelError
from navzoo.evaluation import (
    EpisodeResult,
    episode_map,
    evaluate,
    format_distance_table,
    format_table,
    plot_by_distance,
    summarize,
)
from navzoo.models import ActorCritic
from navzoo.policy_agent import ACTION_MODES, PolicyAgent, check_sim_config, sim_settings
from navzoo.replay import SUFFIX, make_replay, save_replay
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.sim_cli import add_sim_arguments, sim_config_from_args
from navzoo.tasks import get_task
from navzoo.topdown import save_png
from navzoo.zoo import HF_HUB_PREFIX, load

DEFAULT_AGENTS = ("navzoo-pointnav-depth", *BASELINES)  # the shipped depth agent against the baselines
GOALLESS_BASELINES = tuple(b for b in BASELINES if b not in GOAL_BASELINES)  # the agents Flee / Explore run
DEFAULT_SENSORS = ("depth",)
DEFAULT_RESOLUTION = 64


@dataclass
class _Agent:
    """An agent named on the command line: a baseline (no policy) or a loaded model."""

    label: str
    source: str
    policy: ActorCritic | None = None


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate baselines and trained models on PointGoal, Flee or Explore episodes",
        description="Evaluate agents on the fixed episodes of a split: prints the task's metrics with 95% "
        "confidence intervals (PointGoal: Success and SPL, also by geodesic distance; Flee: D_T; Explore: "
        "visited cells) and writes eval.json, a top-down map per agent, replays and for PointGoal "
        "spl_by_distance.png (DD-PPO Fig. 13). --task defaults to the task the first model was trained "
        "for (PointGoal for baselines). Models run with the sensors and resolution they were built for "
        "unless --sensors / --resolution say otherwise; baselines use 64x64 depth by default.",
    )
    parser.add_argument(
        "agents",
        nargs="*",
        help=f"baselines ({', '.join(BASELINES)}; {' and '.join(GOAL_BASELINES)} need PointGoal's goal), "
        "zoo names, model or training-run folders (config.json + model.safetensors), or hf-hub:org/name "
        "(default: navzoo's shipped depth agent and all baselines on PointGoal, "
        f"{' and '.join(GOALLESS_BASELINES)} on Flee and Explore)",
    )
    parser.add_argument("--episodes", type=int, default=96, help="number of episodes (default 96)")
    parser.add_argument(
        "--mode",
        choices=ACTION_MODES,
        default="sampled",
        help="how models choose actions: sampled from the policy's distribution (default, as "
        "habitat-baselines' evaluation does) or its most likely action (deterministic)",
    )
    parser.add_argument(
        "--replays",
        type=int,
        default=3,
        help="save replays of the first K episodes of each agent under OUT/replays/<agent>/ (default 3)",
    )
    parser.add_argument("--out", default="runs/eval", help="output folder (default runs/eval)")
    parser.add_argument("--map-episode", type=int, default=0, help="episode drawn on the maps (default 0)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: torch's own choice; on a busy machine 1 is often faster)",
    )
    add_sim_arguments(parser)
    # None marks "not given", so that models can bring their own task, sensors and resolution.
    parser.set_defaults(run=_run, task=None, sensors=None, resolution=None)


def _run(args) -> None:
    if args.replays < 0:
        raise ConfigError("replays", args.replays, "0 or more episodes per agent")
    if args.episodes < 1:
        raise ConfigError("episodes", args.episodes, "1 or more")
    if not 0 <= args.map_episode < args.episodes:
        raise ConfigError("map-episode", args.map_episode, f"an episode in 0 .. {args.episodes - 1}")
    if args.threads is not None:
        if args.threads < 1:
            raise ConfigError("threads", args.threads, "1 or more")
        torch.set_num_threads(args.threads)
    # With no agents named, the task picks them; otherwise the first model's task is the default.
    with_goal = args.task is None or get_task(args.task).has_goal
    sources = args.agents or list(DEFAULT_AGENTS if with_goal else GOALLESS_BASELINES)
    agents = unique_labels([_load_agent(source, args.device) for source in sources])
    task = args.task or next((a.policy.task for a in agents if a.policy is not None), "pointnav")
    # Every mismatch of task, sensors or resolution is reported before anything runs.
    configs = [_sim_config(args, agent, task) for agent in agents]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{get_task(task).label}, split {args.split}, {args.episodes} episodes")
    sims: dict[SimConfig, BatchSim] = {}  # one simulator per distinct sensors and resolution
    settings = {k: v for k, v in vars(args).items() if k != "run"} | {"agents": sources, "task": task}
    summaries, report = {}, {"config": settings, "agents": {}}
    try:
        for agent, config in zip(agents, configs, strict=True):
            if config not in sims:
                sims[config] = BatchSim(config)
            summaries[agent.label], report["agents"][agent.label] = _evaluate_agent(
                agent, sims[config], args, out
            )
    finally:
        for sim in sims.values():
            sim.close()
    written = [out / "eval.json"]
    (out / "eval.json").write_text(json.dumps(_json_safe(report), indent=2))
    print()
    print(format_table(summaries, task))
    if get_task(task).has_goal:  # only a task with a goal has a goal distance to break results down by
        written.append(plot_by_distance(summaries, out / "spl_by_distance.png"))
        print()
        print(format_distance_table(summaries))
    print(
        f"\nwrote {', '.join(map(str, written))}, maps {out}/map-<agent>.png (episode {args.map_episode}) "
        f"and replays {out}/replays/<agent>/"
    )


def _load_agent(source: str, device: str) -> _Agent:
    if source in BASELINES:  # a baseline name wins over a folder of that name; pass ./name for the folder
        return _Agent(source, source)
    try:
        policy = load(source, device=device)
    except UnknownModelError as err:
        hint = f"The baseline agents are {', '.join(BASELINES)}."
        raise UnknownModelError(f"{str(err).rstrip('.')}. {hint}") from None
    return _Agent(_label(source), source, policy)


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


def _sim_config(args, agent: _Agent, task: str) -> SimConfig:
    """The user's --sensors / --resolution where given, else the model's, else 64x64 depth; ConfigError
    if the agent cannot run `task`."""
    settings = {"sensors": DEFAULT_SENSORS, "resolution": (DEFAULT_RESOLUTION, DEFAULT_RESOLUTION)}
    if agent.policy is not None:
        settings.update(sim_settings(agent.policy.config))
    if args.sensors is not None:
        settings["sensors"] = tuple(args.sensors)
    if args.resolution is not None:
        settings["resolution"] = (args.resolution, args.resolution)
    shared = argparse.Namespace(
        **{**vars(args), "task": task, "sensors": DEFAULT_SENSORS, "resolution": DEFAULT_RESOLUTION}
    )
    config = sim_config_from_args(shared).replace(**settings)
    if agent.policy is None:
        check_baseline_task(agent.source, task)
    else:
        check_sim_config(agent.policy.config, config, f"model {agent.label!r}", agent.policy.task)
    return config


def _evaluate_agent(agent: _Agent, sim: BatchSim, args, out: Path) -> tuple[dict, dict]:
    """Evaluate one agent; write its map and replays. Returns its summary and its eval.json entry."""
    model, mode = None, None
    if agent.policy is None:
        runner = make_baseline(agent.source, sim, seed=args.seed)
    else:
        runner = PolicyAgent(
            agent.policy, sim.num_envs, deterministic=args.mode == "deterministic", seed=args.seed
        )
        model, mode = runner.describe(), runner.mode
    config = sim.config
    sensors = "+".join(config.sensors) or "blind"
    print(
        f"{agent.label}: {config.resolution[0]}x{config.resolution[1]} {sensors}"
        + (f", {mode}" if mode else "")
    )
    results = evaluate(sim, runner, args.episodes)
    shown = results[args.map_episode]
    save_png(episode_map(sim, shown), out / f"map-{agent.label}.png")
    replays = [_save_replay(sim, result, agent.label, model, mode, out) for result in results[: args.replays]]
    summary = summarize(results)
    entry = {
        "source": agent.source,
        "model": model,
        "action_mode": mode,
        "sim": {"sensors": list(config.sensors), "resolution": list(config.resolution)},
        "summary": summary,
        "map": f"map-{agent.label}.png",
        "replays": replays,
        "episodes": [r.metrics() for r in results],
    }
    return summary, entry


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
