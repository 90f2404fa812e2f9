"""Where a run is in its stages (TrainConfig.stages): the stages finished so far, with their algorithm,
frames and wall time, and where the current one began, as checkpoints and the exported model record them."""

from __future__ import annotations

from typing import Any

from navzoo.train.config import TrainConfig
from navzoo.train.stage_config import StageSettings


class StageTracker:
    def __init__(self, config: TrainConfig):
        self.config = config
        self.finished: list[dict[str, Any]] = []  # algorithm, frames, wall time of each finished stage
        self.start = (0, 0, 0.0)  # (update, frames, elapsed_s) where the current stage began

    @property
    def index(self) -> int:
        """The current stage: 0 the first, i the run's stages[i - 1]."""
        return len(self.finished)

    def next_from(self) -> int | None:
        """The frame where the next stage begins; None in the last stage."""
        later = self.config.stages[self.index :]
        return later[0].from_frames if later else None

    def current(self, frames: int, elapsed_s: float) -> dict[str, Any]:
        """The stage running now, as far as it has come: its algorithm, frames and wall time."""
        _, start_frames, start_elapsed = self.start
        _, settings = self.config.stage_settings()[self.index]
        wall = elapsed_s - start_elapsed
        return {"algorithm": settings.algorithm, "frames": frames - start_frames, "wall_time_s": wall}

    def progress(self, update: int, frames: int) -> tuple[float, int]:
        """How far the current stage has come: the share of its frames done, and its updates done."""
        total = self.config.total_frames
        start_update, start_frames, _ = self.start
        end = min(self.next_from() or total, total)
        done = (frames - start_frames) / max(1, end - start_frames)
        return min(1.0, done), update - start_update

    def advance(self, update: int, frames: int, elapsed_s: float) -> StageSettings:
        """Finish the current stage here and begin the next; returns the settings it trains with."""
        _, settings = self.config.stage_settings()[self.index + 1]
        self.finished.append(self.current(frames, elapsed_s))
        self.start = (update, frames, elapsed_s)
        return settings

    def records(self, frames: int, elapsed_s: float) -> list[dict[str, Any]]:
        """Every stage so far, the current one as far as it has come."""
        return [*self.finished, self.current(frames, elapsed_s)]
