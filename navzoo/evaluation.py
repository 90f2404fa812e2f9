"""Run an agent over a split's fixed episodes and summarise Success and SPL, as habitat's evaluation does.

An agent is anything with ``act(obs, first) -> actions``; ``first`` marks environments whose episode has
just begun (for recurrent agents to clear their state). Episodes 0..E-1 of the split are each counted
once, whichever environment ran them.
"""

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm import tqdm

from navzoo.errors import ConfigError
from navzoo.sim.batch_sim import BatchSim
from navzoo.topdown import draw_topdown, shortest_path

DISTANCE_BINS = (0.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0, math.inf)  # metres of geodesic start distance


@dataclass
class EpisodeResult:
    episode_index: int
    episode_id: str
    scene_id: str
    geodesic_distance: float
    success: float
    spl: float
    distance_to_goal: float
    path_length: float
    collisions: int
    num_steps: int
    episode_return: float
    positions: np.ndarray  # [T + 1, 2] agent positions from the start
    headings: np.ndarray  # [T + 1]
    actions: np.ndarray  # [T]

    def metrics(self) -> dict:
        skip = ("positions", "headings", "actions")
        return {k: v for k, v in asdict(self).items() if k not in skip}


def evaluate(sim: BatchSim, agent, num_episodes: int, progress: bool = True) -> list[EpisodeResult]:
    """Run `agent` until each of the first `num_episodes` episodes of `sim`'s fixed set has ended once."""
    if not sim.fixed:
        raise ConfigError("split", sim.config.split, "'val' or 'test' (or an episodes_file) for evaluation")
    if not 0 < num_episodes <= len(sim.episodes):
        raise ConfigError("episodes", num_episodes, f"1 .. {len(sim.episodes)} (episodes in this set)")
    n, limit, dev = sim.num_envs, sim.config.max_episode_steps, sim.device
    envs = torch.arange(n, device=dev)
    obs = sim.reset(seed=sim.config.seed)  # reseeding restarts the episode order at episode 0
    # Per-environment trajectory buffers, indexed by the step within the running episode.
    positions = torch.zeros(limit + 1, n, 2, device=dev)
    headings = torch.zeros(limit + 1, n, device=dev)
    actions_taken = torch.zeros(limit, n, dtype=torch.long, device=dev)
    positions[0], headings[0] = sim.pos, sim.heading
    step_of = torch.zeros(n, dtype=torch.long, device=dev)
    running = sim.episode_index.clone()
    first = torch.ones(n, dtype=torch.bool, device=dev)
    results: dict[int, EpisodeResult] = {}
    bar = tqdm(total=num_episodes, desc="episodes", unit="ep", disable=not progress, leave=False)
    while len(results) < num_episodes:
        actions = agent.act(obs, first)
        actions_taken[step_of, envs] = actions
        obs, _, done, info = sim.step(actions)
        step_of += 1
        ended = info.get("episode")
        end_pos = sim.pos if ended is None else torch.where(done[:, None], ended["position"], sim.pos)
        end_heading = sim.heading if ended is None else torch.where(done, ended["heading"], sim.heading)
        positions[step_of, envs], headings[step_of, envs] = end_pos, end_heading
        for i in torch.nonzero(done).squeeze(1).tolist():
            index, steps = int(running[i]), int(step_of[i])
            if index < num_episodes and index not in results:
                trail = (positions[: steps + 1, i], headings[: steps + 1, i], actions_taken[:steps, i])
                results[index] = _result(sim, index, ended, i, *trail)
                bar.update(1)
        if ended is not None:
            step_of[done] = 0
            positions[0, done], headings[0, done] = sim.pos[done], sim.heading[done]
            running = torch.where(done, sim.episode_index, running)
        first = done
    bar.close()
    return [results[i] for i in range(num_episodes)]


def _result(sim: BatchSim, index: int, ended: dict, env: int, positions, headings, actions) -> EpisodeResult:
    episode = sim.episodes[index]
    return EpisodeResult(
        episode_index=index,
        episode_id=episode.episode_id,
        scene_id=episode.scene_id,
        geodesic_distance=float(ended["geodesic_distance"][env]),
        success=float(ended["success"][env]),
        spl=float(ended["spl"][env]),
        distance_to_goal=float(ended["distance_to_goal"][env]),
        path_length=float(ended["path_length"][env]),
        collisions=int(ended["collisions"][env]),
        num_steps=int(ended["num_steps"][env]),
        episode_return=float(ended["episode_return"][env]),
        positions=positions.cpu().numpy().copy(),
        headings=headings.cpu().numpy().copy(),
        actions=actions.cpu().numpy().copy(),
    )


def mean_ci(values) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (normal approximation)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2:
        return float(values.mean()), math.nan
    return float(values.mean()), float(1.96 * values.std(ddof=1) / math.sqrt(len(values)))


def summarize(results: list[EpisodeResult]) -> dict:
    success, success_ci = mean_ci([r.success for r in results])
    spl, spl_ci = mean_ci([r.spl for r in results])
    by_distance = []
    for lo, hi in itertools.pairwise(DISTANCE_BINS):
        chosen = [r for r in results if lo <= r.geodesic_distance < hi]
        if chosen:
            by_distance.append(
                {
                    "min_geodesic": lo,
                    "max_geodesic": hi,
                    "episodes": len(chosen),
                    "success": mean_ci([r.success for r in chosen])[0],
                    "spl": mean_ci([r.spl for r in chosen])[0],
                }
            )
    return {
        "episodes": len(results),
        "success": success,
        "success_ci95": success_ci,
        "spl": spl,
        "spl_ci95": spl_ci,
        "distance_to_goal": float(np.mean([r.distance_to_goal for r in results])),
        "path_length": float(np.mean([r.path_length for r in results])),
        "collisions": float(np.mean([r.collisions for r in results])),
        "num_steps": float(np.mean([r.num_steps for r in results])),
        "by_distance": by_distance,
    }


def format_table(summaries: dict[str, dict]) -> str:
    """A plain-text table, one row per agent."""
    header = (
        f"{'agent':<16} {'episodes':>8} {'success':>15} {'SPL':>15} {'dist-to-goal':>12} {'collisions':>10}"
    )
    lines = [header, "-" * len(header)]
    for name, s in summaries.items():
        lines.append(
            f"{name:<16} {s['episodes']:>8d} {s['success']:>8.3f} ±{s['success_ci95']:.3f}"
            f" {s['spl']:>8.3f} ±{s['spl_ci95']:.3f} {s['distance_to_goal']:>12.2f}"
            f" {s['collisions']:>10.1f}"
        )
    return "\n".join(lines)


def episode_map(sim: BatchSim, result: EpisodeResult, cell_pixels: int = 8) -> np.ndarray:
    """Top-down picture of an evaluated episode: map, shortest path, trajectory, start and goal."""
    table = sim.pool.episodes
    assets = sim.pool.assets[int(table["slot"][result.episode_index])]
    rows, cols = assets.nav.shape
    field = sim.pool.fields[int(table["field"][result.episode_index]), :rows, :cols].cpu().numpy()
    episode = sim.episodes[result.episode_index]
    path = shortest_path(assets.nav, field, episode.start)
    return draw_topdown(
        assets.scene,
        assets.nav,
        result.positions,
        episode.goal,
        path,
        result.headings,
        cell_pixels=cell_pixels,
        success_radius=sim.config.success_distance,
    )
