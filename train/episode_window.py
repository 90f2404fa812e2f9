"""The logged episode metrics: means over the episodes that finished in the last few updates, on all workers.
One update finishes few episodes, so their means alone would make a noisy learning curve."""

from __future__ import annotations

import math
from collections import deque

STATS_WINDOW = 20  # updates whose finished episodes make up the logged episode metrics


class EpisodeWindow:
    def __init__(self, metric_names: tuple[str, ...], updates: int = STATS_WINDOW):
        self.metric_names = metric_names
        self.updates: deque[dict[str, float]] = deque(maxlen=updates)  # per update: episodes, metric sums

    def add(self, sums: dict[str, float]) -> None:
        """One update's count of finished episodes ("episodes") and the sums of their metrics."""
        self.updates.append({k: sums[k] for k in ("episodes", *self.metric_names)})

    def means(self) -> dict[str, float]:
        """{"episode/<metric>": mean over the window's episodes}; NaN while no episode has finished."""
        count = sum(u["episodes"] for u in self.updates)
        return {
            f"episode/{name}": sum(u[name] for u in self.updates) / count if count else math.nan
            for name in self.metric_names
        }

    def state(self) -> list[dict[str, float]]:
        return list(self.updates)

    def load_state(self, state: list[dict[str, float]]) -> None:
        self.updates = deque(state, maxlen=self.updates.maxlen)
