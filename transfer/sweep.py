"""A transfer sweep (DD-PPO Fig. 5): every setting trained for one task from one PointGoal model, each
evaluated on the val episodes at its start and at every checkpoint, drawn as performance vs frames.

Writes OUT/<setting>/ (the run folders), OUT/sweep.json (the curves, parameter counts, wall times, and
for a setting that could not run, the reason) and OUT/sweep-<task>.png. A sweep that stopped part way
resumes where it was: finished runs are kept, an unfinished one continues from its last checkpoint, and
a setting that could not run is tried again. The base model is loaded once, for all settings.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from matplotlib.figure import Figure

from navzoo.errors import ConfigError
from navzoo.evaluation import AgentEntry, run
from navzoo.tasks import get_task
from navzoo.train import checkpoint as ckpt
from navzoo.transfer.config import TransferConfig, transfer_train_config
from navzoo.transfer.finetune import (
    checkpoint_policy,
    finetune,
    load_base,
    policy_spec,
    trainable_parameters,
)
from navzoo.transfer.imagenet import ImageNetWeightsError
from navzoo.transfer.settings import SETTINGS


@dataclass(frozen=True)
class EvalPlan:
    episodes: int = 32  # val episodes per point of a curve
    num_envs: int = 16
    points: int = 5  # checkpoints per run (and the start)


def run_sweep(
    task: str,
    base: str,
    frames: int,
    out: str | Path,
    settings: tuple[str, ...] = tuple(SETTINGS),
    plan: EvalPlan = EvalPlan(),
    overrides: Sequence[str] = (),
    transfer_options: dict | None = None,
) -> dict:
    """Train and evaluate each setting in turn; returns what sweep.json holds."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ConfigError(
            "--setting", "all", "one setting per torchrun job (the sweep runs its settings one after another)"
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "sweep.json"
    options = TransferConfig(task=task, setting=settings[0], base=base, **(transfer_options or {}))
    results = _load(results_path, task, options.base, frames, plan, list(overrides), options.build_kwargs())
    base_policy = load_base(base)
    for setting in settings:
        if results["settings"].get(setting, {}).get("status") == "done":
            continue  # a setting that could not run is tried again: its weights may be there now
        transfer = dataclasses.replace(options, setting=setting)
        print(f"[{setting}] {SETTINGS[setting].description}", flush=True)
        results["settings"][setting] = _run_setting(
            transfer, base_policy, frames, out / setting, plan, overrides
        )
        results_path.write_text(json.dumps(results, indent=2) + "\n")
    plot_sweep(results, out / f"sweep-{task}.png")
    return results


def _run_setting(transfer, base_policy, frames, run_dir, plan, overrides) -> dict:
    entry: dict[str, Any] = {"label": SETTINGS[transfer.setting].label}
    config = transfer_train_config(base_policy, transfer.task, frames, overrides)
    # `points` evenly spaced checkpoints, all kept for the curve.
    updates = math.ceil(frames / config.frames_per_update(1))
    every = max(1, math.ceil(updates / plan.points))
    config = dataclasses.replace(config, checkpoint_every=every, keep_checkpoints=plan.points + 1)
    try:
        # With the run's seed, as finetune builds it: the policy training starts from.
        start = policy_spec(transfer, base_policy, config.seed).policy
    except ImageNetWeightsError as err:
        print(f"[{transfer.setting}] not run: {err}", flush=True)
        return {**entry, "status": "not run", "reason": str(err)}
    entry["trainable_parameters"] = trainable_parameters(start)
    entry["total_parameters"] = sum(p.numel() for p in start.parameters())
    started = time.perf_counter()
    resume = ckpt.latest_checkpoint(run_dir) is not None
    result = finetune(transfer, config, run_dir, resume=resume, base=base_policy)
    entry["train_wall_s"] = round(time.perf_counter() - started, 1)
    entry["frames"] = result.frames
    curve = [_point(start.eval(), 0, transfer.task, plan)]
    for path in ckpt.list_checkpoints(run_dir):
        policy, trained = checkpoint_policy(start, path)
        curve.append(_point(policy, trained, transfer.task, plan))
        print(f"[{transfer.setting}] {trained:,} frames: {curve[-1]['metric']:.3f}", flush=True)
    return {**entry, "status": "done", "curve": curve}


def _point(policy, frames: int, task: str, plan: EvalPlan) -> dict:
    """Mean of the task's metric over the first `plan.episodes` val episodes, sampled actions."""
    with torch.inference_mode():
        result = run(
            [AgentEntry("policy", "policy", policy)],
            task=task,
            episodes=plan.episodes,
            num_envs=plan.num_envs,
            progress=False,
        )
    summary, metric = result.summaries["policy"], get_task(task).primary_metric
    return {"frames": frames, "metric": summary[metric], "ci95": summary[f"{metric}_ci95"]}


def _load(
    path: Path, task: str, base: str, frames: int, plan: EvalPlan, overrides: list, options: dict
) -> dict:
    """The results so far of this sweep in `path`, or fresh ones. A folder holding a sweep with other
    arguments is refused: its runs would be resumed under the new ones."""
    fresh = {
        "task": task,
        "base_model": base,
        "frames": frames,
        "metric": get_task(task).primary_metric,
        "eval": {"split": "val", "episodes": plan.episodes, "action_mode": "sampled"},
        "overrides": overrides,
        "options": json.loads(json.dumps(options)),  # tuples as lists, as they come back from the file
        "settings": {},
    }
    if not path.is_file():
        return fresh
    saved = json.loads(path.read_text())
    differ = [k for k in fresh if k != "settings" and saved.get(k) != fresh[k]]
    if differ:
        raise ConfigError(
            "--run-dir",
            str(path.parent),
            f"a new folder: it holds a sweep with other {', '.join(differ)} "
            f"({', '.join(f'{k}={saved.get(k)!r}' for k in differ)})",
        )
    return saved


def plot_sweep(results: dict, path: str | Path) -> Path:
    """Performance vs frames, one line (with its 95% interval) per setting that ran."""
    fig = Figure(figsize=(6.4, 4.2), dpi=120)
    ax = fig.subplots()
    for entry in results["settings"].values():
        if entry.get("status") != "done":
            continue
        curve = entry["curve"]
        x = [p["frames"] / 1e6 for p in curve]
        y = [p["metric"] for p in curve]
        ci = [0.0 if p["ci95"] is None or math.isnan(p["ci95"]) else p["ci95"] for p in curve]
        (line,) = ax.plot(x, y, marker="o", markersize=3, label=entry["label"])
        ax.fill_between(
            x,
            [a - b for a, b in zip(y, ci, strict=True)],
            [a + b for a, b in zip(y, ci, strict=True)],
            alpha=0.15,
            color=line.get_color(),
        )
    skipped = [e["label"] for e in results["settings"].values() if e.get("status") == "not run"]
    title = f"{results['task'].capitalize()} from {results['base_model']}"
    if skipped:
        title += f"\nnot run: {', '.join(skipped)}"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("frames of experience (millions)")
    task = get_task(results["task"])
    ax.set_ylabel(f"{task.label}: {task.metric_label(results['metric'])}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    return path
