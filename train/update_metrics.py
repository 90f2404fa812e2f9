"""The end of an update: this update's statistics combined over all workers, whether any worker was asked to
stop, and the metrics it logs."""

from __future__ import annotations

import signal

import torch

from navzoo.tasks import get_task
from navzoo.train.distributed import all_reduce

# Episode metrics of every task, summed over the episodes that end in a rollout; a task adds its own.
COMMON_METRICS = ("episode_return", "num_steps", "path_length", "collisions")


def episode_metric_names(task: str) -> tuple[str, ...]:
    return COMMON_METRICS + get_task(task).training_metrics


def sum_over_workers(
    rollout: dict, losses: dict, learning_s: float, num_envs: int, device: torch.device
) -> dict[str, float]:
    """Each worker's rollout sums, losses and times ("rollout/...", "loss/..."), summed over them all."""
    local = {f"rollout/{k}": v for k, v in rollout.items()}
    local.update({f"loss/{k}": v for k, v in losses.items()})
    local["rollout/learning_s"] = learning_s
    local["rollout/frames"] = rollout["steps"] * num_envs
    return all_reduce(local, device)


def fewest_steps(rollout: dict, device: torch.device) -> float:
    """The shortest rollout of any worker this update."""
    return all_reduce({"steps": rollout["steps"]}, device, op="min")["steps"]


def stop_requested_on_any_worker(stop_signal: int | None, device: torch.device) -> str | None:
    """The name of the signal that asked any worker to stop (the same on every worker), or None.

    A signal reaches one worker (or not all at once); all of them must stop after the same update.
    """
    signum = all_reduce({"signal": float(stop_signal or 0)}, device, op="max")["signal"]
    return signal.Signals(int(signum)).name if signum else None


def update_metrics(
    totals: dict[str, float],
    steps_min: float,
    frames: int,
    wall: float,
    lr: float,
    world: int,
    teacher_share: float | None,
    update: int,
    episodes: int,
) -> dict[str, float]:
    """Losses and times as means over the `world` workers, the rollouts' lengths, and the training
    counters; `teacher_share`: the teacher's share of the driving, None without a teacher."""
    metrics = {k: v / world for k, v in totals.items() if k.startswith("loss/")}
    sim_s, inference_s = totals["rollout/sim_s"] / world, totals["rollout/inference_s"] / world
    teacher_s, learn_s = totals["rollout/teacher_s"] / world, totals["rollout/learning_s"] / world
    busy = sim_s + inference_s + teacher_s + learn_s
    with_teacher = teacher_share is not None
    metrics.update(
        {
            "perf/fps": frames / wall,
            "perf/sim_fraction": sim_s / busy,
            "perf/inference_fraction": inference_s / busy,
            **({"perf/teacher_fraction": teacher_s / busy} if with_teacher else {}),
            "perf/learning_fraction": learn_s / busy,
            "perf/update_s": wall,
            "rollout/steps_mean": totals["rollout/steps"] / world,
            "rollout/steps_min": steps_min,
            "rollout/preempted_workers": totals["rollout/preempted"],
            "train/lr": lr,
            **({"train/teacher_share": teacher_share} if with_teacher else {}),
            "train/update": update,
            "train/episodes": episodes,
        }
    )
    return metrics
