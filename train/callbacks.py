"""Hook points of the trainer: a callback sees the run at its start, after every update and checkpoint, and
at its end, on every worker. Subclass TrainerCallback and override the methods you need; the trainer calls
them in the order the callbacks were given.

A callback reads the run through TrainingRun, the part of the trainer it may use (its config, policy,
simulator and counters), and may wrap its parts, as a test does to make one worker a straggler; what it
changes changes the run. This module does not import the trainer: the trainer imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from navzoo.models import ActorCritic
    from navzoo.sim.batch_sim import BatchSim
    from navzoo.train.config import TrainConfig


class TrainingRun(Protocol):
    """What a callback may read of a run in progress (navzoo.train.trainer.Trainer is one)."""

    config: TrainConfig
    policy: ActorCritic  # the module being trained
    sim: BatchSim  # this worker's simulator (a later stage may replace it)
    update: int  # updates done
    frames: int  # frames done, summed over the workers


@dataclass
class TrainResult:
    run_dir: Path
    updates: int
    frames: int
    stopped_by: str | None  # name of the signal that ended the run early
    metrics: dict[str, float]


class TrainerCallback:
    def on_train_start(self, run: TrainingRun) -> None:
        """The run folder is ready and a resumed or initialised run is restored; no update has run yet."""

    def on_update_end(self, run: TrainingRun, metrics: dict[str, float]) -> None:
        """An update is done and counted (run.update, run.frames); `metrics` is what it logs."""

    def on_checkpoint(self, run: TrainingRun, path: str) -> None:
        """Every worker's state is in the checkpoint at `path`, and the model is exported."""

    def on_train_end(self, run: TrainingRun, result: TrainResult) -> None:
        """The run finished or was stopped by a signal; the last checkpoint is written."""
