"""What a training run reports: TensorBoard scalars, a JSONL log, a progress bar, a learning-curve plot.

Only the main worker logs; the numbers it writes are already all-reduced over the workers.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from tqdm import tqdm

LOG_NAME = "log.jsonl"
CURVE_NAME = "learning_curve.png"


class TrainLogger:
    def __init__(self, run_dir: Path, total_frames: int, initial_frames: int, enabled: bool, resumed: bool):
        """`resumed`: continuing from a checkpoint at `initial_frames`; what was logged after it is dropped,
        since those updates run again."""
        self.enabled = enabled
        self.run_dir = run_dir
        if not enabled:
            return
        from torch.utils.tensorboard import SummaryWriter

        if resumed:
            _drop_lines_after(run_dir / LOG_NAME, initial_frames)
        self.writer = SummaryWriter(str(run_dir / "tb"), purge_step=initial_frames if resumed else None)
        self.jsonl = open(run_dir / LOG_NAME, "a")  # noqa: SIM115 - open for the whole run
        self.bar = tqdm(
            total=total_frames,
            initial=initial_frames,
            unit="frame",
            unit_scale=True,
            dynamic_ncols=True,
            desc="train",
            mininterval=2.0,
        )

    def event(self, **fields) -> None:
        """A non-scalar line in the JSONL log (start, resume, checkpoint, stop)."""
        if self.enabled:
            self.jsonl.write(json.dumps(fields) + "\n")
            self.jsonl.flush()

    def log(self, frames: int, metrics: dict[str, float]) -> None:
        if not self.enabled:
            return
        for key, value in metrics.items():
            if value is not None and math.isfinite(value):
                self.writer.add_scalar(key, value, frames)
        self.jsonl.write(json.dumps({"frames": frames, **metrics}) + "\n")
        self.jsonl.flush()
        shown = {
            "fps": f"{metrics.get('perf/fps', 0):.0f}",
            "spl": _fmt(metrics.get("episode/spl")),
            "success": _fmt(metrics.get("episode/success")),
            "reward": _fmt(metrics.get("episode/episode_return")),
        }
        self.bar.set_postfix({k: v for k, v in shown.items() if v}, refresh=False)

    def advance(self, frames: int) -> None:
        if self.enabled:
            self.bar.update(frames - self.bar.n)

    def close(self) -> None:
        if self.enabled:
            self.bar.close()
            self.writer.close()
            self.jsonl.close()


def _fmt(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.3f}"


def _drop_lines_after(path: Path, frames: int) -> None:
    if not path.is_file():
        return
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line).get("frames", 0) <= frames]
    if len(kept) != len(lines):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("".join(kept))
        os.replace(tmp, path)


def read_log(run_dir: Path) -> list[dict]:
    """The metric lines of a run's JSONL log (events skipped)."""
    path = Path(run_dir) / LOG_NAME
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "frames" in r and "event" not in r]


def plot_learning_curve(run_dir: Path, keys: tuple[str, ...]) -> Path | None:
    """The logged `keys` (training-episode metrics, e.g. episode/spl) against frames, from the JSONL log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_log(run_dir)
    present = [k for k in keys if any(k in r for r in rows)]
    if not present:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=120)
    for key in present:
        points = [(r["frames"], r[key]) for r in rows if r.get(key) is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], label=key.split("/")[-1])
    ax.set_xlabel("frames")
    ax.set_ylabel("training episodes (windowed mean)")
    ax.set_title(Path(run_dir).name)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(run_dir) / CURVE_NAME
    fig.savefig(path)
    plt.close(fig)
    return path
