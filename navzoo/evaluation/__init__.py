"""Evaluation: agents on a split's fixed episodes, as habitat evaluates them. Success and SPL for PointGoal,
D_T (`flee_distance`) for Flee, the count of visited 1 m cells for Explore.

- `run`: the library call behind `navzoo eval`, push, the demo and the transfer sweep (navzoo.evaluation.run);
- `evaluate`: one agent on one simulator, every episode recorded (navzoo.evaluation.episodes);
- `summarize`, tables, figures and maps of the results (navzoo.evaluation.report).
"""

from navzoo.evaluation.episodes import EpisodeResult, evaluate
from navzoo.evaluation.report import (
    DISTANCE_BINS,
    distance_bin_label,
    episode_map,
    format_distance_table,
    format_estimate,
    format_family_table,
    format_table,
    mean_ci,
    plot_by_distance,
    summarize,
    wilson_interval,
)
from navzoo.evaluation.run import (
    AgentEntry,
    Evaluation,
    default_agents,
    evaluate_agent,
    load_agent,
    run,
    sim_config_for,
    unique_labels,
)

__all__ = [
    "DISTANCE_BINS",
    "AgentEntry",
    "EpisodeResult",
    "Evaluation",
    "default_agents",
    "distance_bin_label",
    "episode_map",
    "evaluate",
    "evaluate_agent",
    "format_distance_table",
    "format_estimate",
    "format_family_table",
    "format_table",
    "load_agent",
    "mean_ci",
    "plot_by_distance",
    "run",
    "sim_config_for",
    "summarize",
    "unique_labels",
    "wilson_interval",
]
