"""What one step of the replay player shows: the agents' top-down maps, camera views and the table of the
steps around it, the episodes' metrics and the agents' titles. Plain functions of `ReplayView`s, which the
page (navzoo.demo.app) calls on every step and tests call directly.
"""

import html
import math

import numpy as np

from navzoo.evaluation.replay_view import BACKGROUND, ReplayView, summary_line
from navzoo.tasks import get_task

TABLE_ROWS = 6  # steps listed before and after the current one


def last_step(views: list[ReplayView]) -> int:
    return max(v.num_steps for v in views)


def views_image(view: ReplayView, step: int) -> np.ndarray:
    """The camera views at `step` side by side (the shorter episode holds its last frame)."""
    images = list(view.observation_images(min(step, view.num_steps)).values())
    height = max(i.shape[0] for i in images)
    gap = np.full((height, 8, 3), BACKGROUND, dtype=np.uint8)
    row = []
    for image in images:
        pad = np.full((height - image.shape[0], image.shape[1], 3), BACKGROUND, dtype=np.uint8)
        row += [np.concatenate([image, pad]), gap]
    return np.concatenate(row[:-1], axis=1)


def map_image(view: ReplayView, step: int) -> np.ndarray:
    return view.map_image(min(step, view.num_steps))


def step_table(view: ReplayView, step: int) -> str:
    """HTML table of the steps around `step`, that step highlighted: action, its probability, value,
    reward and return."""
    t = min(step, view.num_steps)
    first = max(0, min(t - TABLE_ROWS, view.num_steps - 2 * TABLE_ROWS))
    rows = []
    for s in range(first, min(view.num_steps, first + 2 * TABLE_ROWS) + 1):
        info = view.step_info(s)
        probs = info["action_probs"]
        cells = [
            str(s),
            info["action"] or "(end)",
            _number(probs.get(info["action"]) if probs else None, "{:.2f}"),
            _number(info["value"], "{:+.3f}"),
            _number(info["reward"], "{:+.3f}"),
            _number(info["cumulative_reward"], "{:+.2f}"),
        ]
        current = ' class="current"' if s == t else ""
        rows.append(f"<tr{current}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("step", "action", "p(action)", "value", "reward", "return"))
    return f'<div class="navzoo-steps"><table><tr>{head}</tr>{"".join(rows)}</table></div>'


def _number(value, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def step_outputs(views: list[ReplayView], step: int) -> list:
    """Map, camera views and step table of the first and second agent (None for a missing second)."""
    out = []
    for k in range(2):
        if k < len(views):
            out += [map_image(views[k], step), views_image(views[k], step), step_table(views[k], step)]
        else:
            out += [None, None, ""]
    return out


MOTION_ROWS = (
    ("path_length", "path length (m)", "{:.2f}"),
    ("num_steps", "steps", "{:.0f}"),
    ("collisions", "collisions", "{:.0f}"),
    ("episode_return", "return", "{:.3f}"),
)


def metrics_markdown(views: list[ReplayView]) -> str:
    """The episodes' metrics, one column per agent."""

    def cell(text) -> str:
        return html.escape(str(text)).replace("|", "&#124;")

    header = "| | " + " | ".join(cell(v.label) for v in views) + " |"
    lines = [header, "|---" * (len(views) + 1) + "|"]

    def row(name: str, values) -> None:
        lines.append(f"| {name} | " + " | ".join(cell(v) for v in values) + " |")

    row("task", [v.task for v in views])
    row("episode", [f"{v.replay.sim_config.split} #{v.replay.episode_index}" for v in views])
    row("scene", [v.replay.scene_name for v in views])
    headlines = dict.fromkeys(row for v in views for row in get_task(v.task).headline)
    for key, name, fmt in (*headlines, *MOTION_ROWS):
        values = [v.replay.metrics.get(key) for v in views]
        if any(isinstance(x, int | float) and math.isfinite(x) for x in values):
            row(name, [fmt.format(x) if isinstance(x, int | float) else _number(x, "{}") for x in values])
    row("cameras", [_cameras(v) for v in views])
    row("actions", [v.replay.action_mode or "baseline" for v in views])
    return "\n".join(lines)


def _cameras(view: ReplayView) -> str:
    config = view.replay.sim_config
    if not config.sensors:
        return "none (blind)"
    return f"{'+'.join(config.sensors)} {config.resolution[0]}x{config.resolution[1]}"


def titles(views: list[ReplayView]) -> list[str]:
    out = []
    for k, letter in enumerate("AB"):
        if k < len(views):
            summary = summary_line(views[k].replay.metrics, views[k].task)
            out.append(f"### {letter}: {html.escape(views[k].label)}\n{html.escape(summary)}")
        else:
            out.append("")
    return out
