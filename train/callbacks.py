"""Hook points of the trainer: a callback sees the run at its start, after every update and checkpoint, and
at its end, on every worker. Subclass TrainerCallback and override the methods you need; the trainer calls
them in the order the callbacks were given.

A callback may read the trainer (its policy, simulator, counters) and may wrap its parts, as a test does to
make one worker a straggler; what it changes changes the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the trainer imports this module
    from navzoo.train.trainer import Trainer, TrainResult


class TrainerCallback:
    def on_train_start(self, trainer: Trainer) -> None:
        """The run folder is ready and a resumed or initialised run is restored; no update has run yet."""

    def on_update_end(self, trainer: Trainer, metrics: dict[str, float]) -> None:
        """An update is done and counted (trainer.update, trainer.frames); `metrics` is what it logs."""

    def on_checkpoint(self, trainer: Trainer, path: str) -> None:
        """Every worker's state is in the checkpoint at `path`, and the model is exported."""

    def on_train_end(self, trainer: Trainer, result: TrainResult) -> None:
        """The run finished or was stopped by a signal; the last checkpoint is written."""
