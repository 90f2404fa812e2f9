"""What an evaluation reports: means with 95% intervals of the task's metrics (and for PointGoal Success and
SPL by geodesic distance, DD-PPO Fig. 13, and by scene family), plain-text tables, the SPL-by-distance
figure, and a top-down map of an episode.
"""

import itertools
import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from navzoo.errors import ConfigError, NavzooError
from navzoo.evaluation.episodes import EpisodeResult, fixed_episodes
from navzoo.evaluation.scene_maps import scene_maps
from navzoo.evaluation.topdown import draw_episode
from navzoo.names import SCENE_FAMILIES
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.scenes import scene_family
from navzoo.tasks import Task, get_task

DISTANCE_BINS = (0.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0, math.inf)  # metres of geodesic start distance


def mean_ci(values) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (normal approximation)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2:
        return float(values.mean()), math.nan
    return float(values.mean()), float(1.96 * values.std(ddof=1) / math.sqrt(len(values)))


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> list[float]:
    """The 95% Wilson score interval [low, high] of a success rate: unlike the normal approximation it is
    not empty at 0% and 100%, and it stays inside [0, 1]."""
    if trials == 0:
        return [math.nan, math.nan]
    rate, spread = successes / trials, z * z / trials
    centre = (rate + spread / 2) / (1 + spread)
    half = z / (1 + spread) * math.sqrt(rate * (1 - rate) / trials + spread / (4 * trials))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def _rates(results: list[EpisodeResult]) -> dict:
    """Episode count, Success with its 95% Wilson interval [low, high], SPL with its 95% half-width."""
    spl, spl_ci = mean_ci(_finite(results, "spl"))
    successes = sum(bool(r.success) for r in results)
    return {
        "episodes": len(results),
        "success": successes / len(results),
        "success_ci95": wilson_interval(successes, len(results)),
        "spl": spl,
        "spl_ci95": spl_ci,
    }


def format_estimate(summary: dict, key: str, fmt: str = ".3f") -> str:
    """A summary's mean with its 95% interval: "0.842 ± 0.029" for a half-width, "0.937 [0.903, 0.960]"
    for bounds (Success's Wilson interval)."""
    mean, ci = f"{summary[key]:{fmt}}", summary.get(f"{key}_ci95")
    if ci is None:
        return mean
    if isinstance(ci, list | tuple):
        return f"{mean} [{ci[0]:{fmt}}, {ci[1]:{fmt}}]"
    return f"{mean} ±{ci:{fmt}}"


def error_bars(summary: dict, key: str) -> tuple[float, float]:
    """(below, above) the mean of its 95% interval, for plotting."""
    mean, ci = summary[key], summary[f"{key}_ci95"]
    if isinstance(ci, list | tuple):  # rounding can leave a bound a hair inside the mean
        return max(mean - ci[0], 0.0), max(ci[1] - mean, 0.0)
    return ci, ci


def summarize(results: list[EpisodeResult]) -> dict:
    """Means over episodes of one task, with 95% intervals for its metrics (Task.metrics), and the mean path
    length, collisions and steps. PointGoal adds the distance to the goal, and Success / SPL per
    geodesic-distance bin (DD-PPO Fig. 13) and per navzoo scene family (none on scanned scenes); empty
    groups are left out."""
    if not results:
        raise NavzooError(
            "no episodes to summarize: evaluate at least one episode (navzoo.evaluation.evaluate)"
        )
    task = _task_of(results)
    if task.has_goal:
        return _pointgoal_summary(results)
    summary: dict[str, float] = {"episodes": len(results)}
    for metric, _ in task.metrics:
        summary[metric], summary[f"{metric}_ci95"] = mean_ci(_finite(results, metric))
    return {**summary, **_motion(results)}


def _task_of(results: list[EpisodeResult]) -> Task:
    tasks = {r.task for r in results}
    if len(tasks) > 1:
        raise ConfigError("results", sorted(tasks), "episodes of one task (summarise each task on its own)")
    return get_task(tasks.pop() if tasks else "pointnav")


def _finite(results: list[EpisodeResult], metric: str) -> list[float]:
    """Each episode's `metric`; NavzooError naming the first episode where it is not a finite number, so
    that a NaN (an SPL of 0/0, say) never reaches a mean, an interval or a report."""
    values = [getattr(r, metric) for r in results]
    for result, value in zip(results, values, strict=True):
        if value is None or not math.isfinite(value):
            raise NavzooError(
                f"episode {result.episode_index} (episode_id {result.episode_id!r}) has {metric}={value}, "
                "not a number a summary can average; evaluate it again with navzoo.evaluation.evaluate, "
                "whose simulator refuses episodes that leave a metric undefined"
            )
    return values


def _goal_metric(value: float | None) -> float:
    """A metric of a task with a goal, which every episode of such a task has (evaluate records it)."""
    assert value is not None, "an episode of a task with a goal lacks its goal metrics"
    return value


def _pointgoal_summary(results: list[EpisodeResult]) -> dict:
    by_distance = []
    for lo, hi in itertools.pairwise(DISTANCE_BINS):
        chosen = [r for r in results if lo <= _goal_metric(r.geodesic_distance) < hi]
        if chosen:
            by_distance.append({"min_geodesic": lo, "max_geodesic": hi, **_rates(chosen)})
    families = [scene_family(r.scene_id) for r in results]
    by_family = {}
    for family in SCENE_FAMILIES:
        chosen = [r for r, f in zip(results, families, strict=True) if f == family]
        if chosen:
            by_family[family] = _rates(chosen)
    return {
        **_rates(results),
        "distance_to_goal": float(np.mean([_goal_metric(r.distance_to_goal) for r in results])),
        **_motion(results),
        "by_distance": by_distance,
        "by_family": by_family,
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
    """The mean, and its 95% interval where the summary has one."""
    return format_estimate(summary, key, fmt)


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
    rows = {
        distance_bin_label(lo, hi): [
            next((b for b in s["by_distance"] if b["min_geodesic"] == lo), None) for s in summaries.values()
        ]
        for lo, hi in bins
    }
    title = "SPL / success (episodes) by geodesic distance from start to goal"
    return _group_table(summaries, title, "geodesic (m)", rows)


def format_family_table(summaries: dict[str, dict]) -> str:
    """SPL / Success per scene family, one column per agent, episode counts in brackets; "" for fewer than
    two families (none on scanned scenes), where the breakdown would repeat the totals. Summaries written
    before they had `by_family` count as having none."""
    families = [f for f in SCENE_FAMILIES if any(f in s.get("by_family", {}) for s in summaries.values())]
    if len(families) < 2:
        return ""
    rows = {f: [s.get("by_family", {}).get(f) for s in summaries.values()] for f in families}
    return _group_table(summaries, "SPL / success (episodes) by scene family", "family", rows)


def _rates_cell(rates: dict | None) -> str:
    return "-" if rates is None else f"{rates['spl']:.2f} / {rates['success']:.2f} ({rates['episodes']})"


def _group_table(
    summaries: dict[str, dict], title: str, label_header: str, rows: dict[str, list[dict | None]]
) -> str:
    """A table with a row per group (label: each agent's rates there, None where it has no episodes there,
    shown as "-") and a column per agent."""
    width = max([18, *map(len, summaries)])
    header = f"{label_header:<12}" + "".join(f" {name:>{width}}" for name in summaries)
    lines = [title, header, "-" * len(header)]
    for label, cells in rows.items():
        shown = [_rates_cell(c) for c in cells]
        lines.append(f"{label:<12}" + "".join(f" {text:>{width}}" for text in shown))
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
            bars = [error_bars(rows[lo], metric) if lo in rows else (0.0, 0.0) for lo, _ in bins]
            yerr = np.nan_to_num(np.array(bars, dtype=np.float64).T)
            axes.errorbar(x, mean, yerr=yerr, marker="o", capsize=3, label=name)
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
    the shortest path to it (Flee and Explore have no goal). `cell_pixels` pixels per navzoo scene cell;
    scanned scenes at the same scale."""
    index = result.episode_index
    episode = fixed_episodes(sim)[index]
    table = sim.scenes.episodes
    slot, field = int(table["slot"][index]), int(table["field"][index])
    maps = scene_maps(sim, cell_pixels)
    floor = maps.start_floor(index)
    goal, path = None, None
    if get_task(result.task).has_goal:
        goal, path = episode.goal, maps.shortest_path(slot, field, episode.start, floor)
    return draw_episode(
        maps.canvas(slot, floor),
        result.positions,
        goal,
        path,
        result.headings,
        success_radius=sim.config.success_distance,
    )
