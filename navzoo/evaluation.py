"""Run an agent over a split's fixed episodes and summarise its task's metrics, as habitat's evaluation does:
Success and SPL for PointGoal, D_T (`flee_distance`) for Flee, the count of visited 1 m cells for Explore.

An agent is anything with ``act(obs, first) -> actions``; ``first`` marks environments whose episode has
just begun (for recurrent agents to clear their state). An agent that samples its actions may take a third
argument, ``keys`` [N, 2]: the (episode key, step within the episode) of each environment, where the
episode key is a hash of the episode's scene_id and episode_id. It then draws its randomness from
`keyed_uniform` of those keys, so every episode gets the same draws whichever environment runs it, however
many there are, and wherever the episode stands in its list (the demo replays one episode alone).

An agent may also set ``last_value`` [N] (its value estimate of the observations it just acted on) and
``last_action_probs`` [N, A]; they are recorded per step next to the poses, actions and rewards (see
navzoo.policy_agent).
Episodes 0..E-1 of the split are each counted once, whichever environment ran them.
"""

import inspect
import itertools
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure
from tqdm import tqdm

from navzoo.errors import ConfigError
from navzoo.sim.batch_sim import BatchSim, hash32
from navzoo.sim.episodes import Episode
from navzoo.sim.scenes import stable_seed
from navzoo.tasks import TASKS, Task, get_task
from navzoo.topdown import draw_topdown, shortest_path

DISTANCE_BINS = (0.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0, math.inf)  # metres of geodesic start distance
_TRAJECTORY_FIELDS = ("positions", "headings", "actions", "rewards", "values", "action_probs")
_COUNTS = ("collisions", "num_steps", "visited_cells")  # EpisodeResult's integer metrics


@dataclass
class EpisodeResult:
    """One evaluated episode: its metrics (those of its task; the other tasks' fields stay None) and its
    trajectory."""

    episode_index: int
    episode_id: str
    scene_id: str
    path_length: float
    collisions: int
    num_steps: int
    episode_return: float
    positions: np.ndarray  # [T + 1, 2] agent positions from the start
    headings: np.ndarray  # [T + 1]
    actions: np.ndarray  # [T]
    rewards: np.ndarray  # [T], the reward of each action
    values: np.ndarray | None = None  # [T], the agent's value estimate before each action, if it has one
    action_probs: np.ndarray | None = None  # [T, A], the agent's action distribution, if it has one
    task: str = "pointnav"
    geodesic_distance: float | None = None  # PointGoal: geodesic distance from the start to the goal
    success: float | None = None
    spl: float | None = None
    distance_to_goal: float | None = None
    flee_distance: float | None = None  # Flee: D_T = Geo(s_T, s_0) / Max(s_0), in [0, 1]
    visited_cells: int | None = None  # Explore: 1 m cells visited

    def metrics(self) -> dict:
        """The episode's numbers, without the trajectory and without the fields of other tasks."""
        mine = get_task(self.task).episode_fields
        others = [f for task in TASKS.values() for f in task.episode_fields if f not in mine]
        skip = {*_TRAJECTORY_FIELDS, "task", *others}
        return {k: v for k, v in asdict(self).items() if k not in skip}


def evaluate(sim: BatchSim, agent, num_episodes: int, progress: bool = True) -> list[EpisodeResult]:
    """Run `agent` until each of the first `num_episodes` episodes of `sim`'s fixed set has ended once."""
    if not sim.fixed:
        raise ConfigError("split", sim.config.split, "'val' or 'test' (or an episodes_file) for evaluation")
    if not 0 < num_episodes <= len(sim.episodes):
        raise ConfigError("episodes", num_episodes, f"1 .. {len(sim.episodes)} (episodes in this set)")
    obs = sim.reset(seed=sim.config.seed)  # reseeding restarts the episode order at episode 0
    trails = _Trajectories(sim)
    running = sim.episode_index.clone()
    first = torch.ones(sim.num_envs, dtype=torch.bool, device=sim.device)
    keyed = "keys" in inspect.signature(agent.act).parameters
    episode_keys = torch.tensor([episode_key(e) for e in sim.episodes], device=sim.device)
    results: dict[int, EpisodeResult] = {}
    bar = tqdm(total=num_episodes, desc="episodes", unit="ep", disable=not progress, leave=False)
    while len(results) < num_episodes:
        if keyed:
            actions = agent.act(obs, first, keys=torch.stack([episode_keys[running], trails.step], 1))
        else:
            actions = agent.act(obs, first)
        value, probs = getattr(agent, "last_value", None), getattr(agent, "last_action_probs", None)
        obs, rewards, done, info = sim.step(actions)
        ended = info.get("episode")
        end_pos = sim.pos if ended is None else torch.where(done[:, None], ended["position"], sim.pos)
        end_heading = sim.heading if ended is None else torch.where(done, ended["heading"], sim.heading)
        trails.record(actions, rewards, end_pos, end_heading, value, probs)
        for i in torch.nonzero(done).squeeze(1).tolist():
            index = int(running[i])
            if index < num_episodes and index not in results:
                results[index] = _result(sim, index, ended, i, trails.episode(i))
                bar.update(1)
        if ended is not None:
            trails.restart(done, sim.pos, sim.heading)
            running = torch.where(done, sim.episode_index, running)
        first = done
    bar.close()
    return [results[i] for i in range(num_episodes)]


def episode_key(episode: Episode) -> int:
    """A 31-bit key of the episode's identity, the same in any episode list."""
    return stable_seed("episode", episode.scene_id, episode.episode_id) & 0x7FFFFFFF


def keyed_uniform(seed: int, keys: torch.Tensor) -> torch.Tensor:
    """One uniform draw in [0, 1) (float64) per row of `keys` [N, 2] = (episode key, step within the
    episode): a counter-based hash of (seed, episode, step), so the draw depends on nothing else."""
    stream = stable_seed("agent-draws", seed) & 0xFFFFFFFF
    episode, step = keys.long().unbind(1)
    # The constants keep episode 0 and step 0 away from the mixer's fixed point at 0.
    key = hash32(stream ^ hash32(episode + 0x9E37))
    return hash32(key ^ hash32(step + 0x6A09)).double() / 2.0**32


class _Trajectories:
    """Per-environment buffers of the running episodes, indexed by the step within each episode."""

    def __init__(self, sim: BatchSim):
        n, limit, dev = sim.num_envs, sim.config.max_episode_steps, sim.device
        self.envs = torch.arange(n, device=dev)
        self.step = torch.zeros(n, dtype=torch.long, device=dev)
        self.positions = torch.zeros(limit + 1, n, 2, device=dev)
        self.headings = torch.zeros(limit + 1, n, device=dev)
        self.actions = torch.zeros(limit, n, dtype=torch.long, device=dev)
        self.rewards = torch.zeros(limit, n, device=dev)
        self.values: torch.Tensor | None = None  # allocated once an agent reports values
        self.action_probs: torch.Tensor | None = None
        self.restart(torch.ones(n, dtype=torch.bool, device=dev), sim.pos, sim.heading)

    def restart(self, envs: torch.Tensor, pos: torch.Tensor, heading: torch.Tensor) -> None:
        """Begin new episodes in the environments marked by the bool mask `envs`, at these poses."""
        self.step[envs] = 0
        self.positions[0, envs], self.headings[0, envs] = pos[envs], heading[envs]

    def record(self, actions, rewards, pos, heading, value=None, action_probs=None) -> None:
        """One step of every environment: its action, reward, the agent's outputs and the pose reached."""
        step, envs = self.step, self.envs
        self.actions[step, envs], self.rewards[step, envs] = actions, rewards
        if value is not None:
            if self.values is None:
                self.values = torch.zeros_like(self.rewards)
            self.values[step, envs] = value.to(self.values.device, torch.float32)
        if action_probs is not None:
            if self.action_probs is None:
                shape = (*self.rewards.shape, action_probs.shape[-1])
                self.action_probs = torch.zeros(shape, device=self.rewards.device)
            self.action_probs[step, envs] = action_probs.to(self.action_probs.device, torch.float32)
        self.step += 1
        self.positions[self.step, envs], self.headings[self.step, envs] = pos, heading

    def episode(self, env: int) -> dict[str, np.ndarray | None]:
        """The finished episode of `env` as numpy arrays (EpisodeResult's trajectory fields)."""
        steps = int(self.step[env])

        def take(buffer: torch.Tensor | None, length: int) -> np.ndarray | None:
            return None if buffer is None else buffer[:length, env].cpu().numpy().copy()

        return {
            "positions": take(self.positions, steps + 1),
            "headings": take(self.headings, steps + 1),
            "actions": take(self.actions, steps),
            "rewards": take(self.rewards, steps),
            "values": take(self.values, steps),
            "action_probs": take(self.action_probs, steps),
        }


def _result(sim: BatchSim, index: int, ended: dict, env: int, trajectory: dict) -> EpisodeResult:
    episode = sim.episodes[index]

    def value(key: str) -> float | int:
        return (int if key in _COUNTS else float)(ended[key][env])

    return EpisodeResult(
        episode_index=index,
        episode_id=episode.episode_id,
        scene_id=episode.scene_id,
        path_length=value("path_length"),
        collisions=value("collisions"),
        num_steps=value("num_steps"),
        episode_return=value("episode_return"),
        task=sim.task.name,
        **{name: value(name) for name in sim.task.episode_fields},
        **trajectory,
    )


def mean_ci(values) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (normal approximation)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2:
        return float(values.mean()), math.nan
    return float(values.mean()), float(1.96 * values.std(ddof=1) / math.sqrt(len(values)))


def _rates(results: list[EpisodeResult]) -> dict:
    """Episode count, Success and SPL with their 95% confidence half-widths."""
    success, success_ci = mean_ci([r.success for r in results])
    spl, spl_ci = mean_ci([r.spl for r in results])
    return {
        "episodes": len(results),
        "success": success,
        "success_ci95": success_ci,
        "spl": spl,
        "spl_ci95": spl_ci,
    }


def summarize(results: list[EpisodeResult]) -> dict:
    """Means over episodes of one task, with 95% intervals for its metrics (Task.metrics), and the mean path
    length, collisions and steps. PointGoal adds the distance to the goal and Success / SPL per
    geodesic-distance bin (DD-PPO Fig. 13; empty bins are left out)."""
    task = _task_of(results)
    if task.has_goal:
        return _pointgoal_summary(results)
    summary = {"episodes": len(results)}
    for metric, _ in task.metrics:
        summary[metric], summary[f"{metric}_ci95"] = mean_ci([getattr(r, metric) for r in results])
    return {**summary, **_motion(results)}


def _task_of(results: list[EpisodeResult]) -> Task:
    tasks = {r.task for r in results}
    if len(tasks) > 1:
        raise ConfigError("results", sorted(tasks), "episodes of one task (summarise each task on its own)")
    return get_task(tasks.pop() if tasks else "pointnav")


def _pointgoal_summary(results: list[EpisodeResult]) -> dict:
    by_distance = []
    for lo, hi in itertools.pairwise(DISTANCE_BINS):
        chosen = [r for r in results if lo <= r.geodesic_distance < hi]
        if chosen:
            by_distance.append({"min_geodesic": lo, "max_geodesic": hi, **_rates(chosen)})
    return {
        **_rates(results),
        "distance_to_goal": float(np.mean([r.distance_to_goal for r in results])),
        **_motion(results),
        "by_distance": by_distance,
    }


def _motion(results: list[EpisodeResult]) -> dict:
    """The means every task reports: path length, collisions and steps."""
    return {
        "path_length": float(np.mean([r.path_length for r in results])),
        "collisions": float(np.mean([r.collisions for r in results])),
        "num_steps": float(np.mean([r.num_steps for r in results])),
    }


def format_table(summaries: dict[str, dict], task: str = "pointnav") -> str:
    """A plain-text table, one row per agent, with the columns of `task` (the summaries' task)."""
    columns = get_task(task).columns
    width = max([16, *map(len, summaries)])
    header = f"{'agent':<{width}} {'episodes':>8}" + "".join(f" {c.header:>{c.width}}" for c in columns)
    lines = [header, "-" * len(header)]
    for name, s in summaries.items():
        cells = "".join(f" {_cell(s, c.key, c.fmt):>{c.width}}" for c in columns)
        lines.append(f"{name:<{width}} {s['episodes']:>8d}{cells}")
    return "\n".join(lines)


def _cell(summary: dict, key: str, fmt: str) -> str:
    """The mean, and its 95% interval as "±half-width" where the summary has one."""
    mean = f"{summary[key]:>8{fmt}}"
    ci = summary.get(f"{key}_ci95")
    return mean if ci is None else f"{mean} ±{ci:{fmt}}"


def distance_bin_label(lo: float, hi: float) -> str:
    return f"{lo:g}+" if math.isinf(hi) else f"{lo:g}-{hi:g}"


def _distance_bins(summaries: dict[str, dict]) -> list[tuple[float, float]]:
    """The (min, max) geodesic bins holding episodes of any agent, nearest first."""
    return sorted(
        {(b["min_geodesic"], b["max_geodesic"]) for s in summaries.values() for b in s["by_distance"]}
    )


def format_distance_table(summaries: dict[str, dict]) -> str:
    """SPL / Success per geodesic-distance bin, one column per agent, episode counts in brackets."""
    bins = _distance_bins(summaries)
    width = max([18, *map(len, summaries)])
    header = f"{'geodesic (m)':<12}" + "".join(f" {name:>{width}}" for name in summaries)
    lines = ["SPL / success (episodes) by geodesic distance from start to goal", header, "-" * len(header)]
    for lo, hi in bins:
        cells = []
        for s in summaries.values():
            row = next((b for b in s["by_distance"] if b["min_geodesic"] == lo), None)
            cell = "-" if row is None else f"{row['spl']:.2f} / {row['success']:.2f} ({row['episodes']})"
            cells.append(f" {cell:>{width}}")
        lines.append(f"{distance_bin_label(lo, hi):<12}" + "".join(cells))
    return "\n".join(lines)


def plot_by_distance(summaries: dict[str, dict], path: str | Path) -> Path:
    """DD-PPO Fig. 13: Success and SPL against geodesic start distance, one line per agent with its 95%
    interval, bars at the bottom for the fraction of episodes in each bin. Written as a PNG."""
    bins = _distance_bins(summaries)
    x = np.arange(len(bins))
    # matplotlib's Figure renders with Agg without pyplot: no GUI backend and no global state.
    figure = Figure(figsize=(11, 4.2), layout="constrained")
    for axes, metric, title in zip(
        figure.subplots(1, 2), ("success", "spl"), ("Success", "SPL"), strict=True
    ):
        for name, summary in summaries.items():
            rows = {b["min_geodesic"]: b for b in summary["by_distance"]}
            mean = np.array([rows[lo][metric] if lo in rows else np.nan for lo, _ in bins])
            ci = np.nan_to_num([rows[lo][f"{metric}_ci95"] if lo in rows else np.nan for lo, _ in bins])
            axes.errorbar(x, mean, yerr=ci, marker="o", capsize=3, label=name)
        counts = _bin_counts(next(iter(summaries.values())), bins)
        bars = axes.bar(x, counts / max(counts.sum(), 1), width=0.6, color="0.8", zorder=0)
        axes.bar_label(bars, labels=[f"n={c}" for c in counts], fontsize=7, color="0.35")
        axes.set_xticks(x, [distance_bin_label(lo, hi) for lo, hi in bins])
        axes.set_xlabel("geodesic distance from start to goal (m)")
        axes.set_ylabel(f"{title} (bars: fraction of episodes)")
        axes.set_ylim(0, 1.08)
        axes.set_title(f"{title} vs. geodesic distance")
        axes.grid(axis="y", alpha=0.3)
    figure.legend(*figure.axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def _bin_counts(summary: dict, bins: list[tuple[float, float]]) -> np.ndarray:
    rows = {b["min_geodesic"]: b["episodes"] for b in summary["by_distance"]}
    return np.array([rows.get(lo, 0) for lo, _ in bins])


def episode_map(sim: BatchSim, result: EpisodeResult, cell_pixels: int = 8) -> np.ndarray:
    """Top-down picture of an evaluated episode: map, trajectory and start, and for PointGoal the goal and
    the shortest path to it (Flee and Explore have no goal)."""
    table = sim.pool.episodes
    assets = sim.pool.assets[int(table["slot"][result.episode_index])]
    episode = sim.episodes[result.episode_index]
    goal, path = None, None
    if get_task(result.task).has_goal:
        rows, cols = assets.nav.shape
        field = sim.pool.fields[int(table["field"][result.episode_index]), :rows, :cols].cpu().numpy()
        goal, path = episode.goal, shortest_path(assets.nav, field, episode.start)
    return draw_topdown(
        assets.scene,
        assets.nav,
        result.positions,
        goal,
        path,
        result.headings,
        cell_pixels=cell_pixels,
        success_radius=sim.config.success_distance,
    )
