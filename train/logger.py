"""What a training run reports: TensorBoard scalars, a JSONL log, a progress bar, a learning-curve plot,
and with a W&B project configured, the same scalars in Weights & Biases.

Only the main worker logs; the numbers it writes are already all-reduced over the workers.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from tqdm import tqdm

from navzoo.errors import ConfigError
from navzoo.storage.atomic import append_whole, removed_on_failure, temporary_path
from navzoo.train.config_blocks import WANDB_MODES, WandbConfig

LOG_NAME = "log.jsonl"
CURVE_NAME = "learning_curve.png"


WANDB_ID_NAME = "wandb-run-id"  # in the run folder: a resumed run logs to the same W&B run


class TrainLogger:
    def __init__(
        self,
        run_dir: Path,
        total_frames: int,
        initial_frames: int,
        enabled: bool,
        resumed: bool,
        wandb: WandbConfig | None = None,
        config: dict | None = None,
    ):
        """`resumed`: continuing from a checkpoint at `initial_frames`; what was logged after it is dropped,
        since those updates run again. `wandb` with a project also sends the scalars there, with `config`
        as the W&B run's config."""
        self.enabled = enabled
        self.run_dir = run_dir
        if not enabled:
            return
        self.wandb_run = _start_wandb(wandb, run_dir, config) if wandb and wandb.project else None
        from torch.utils.tensorboard import SummaryWriter

        if resumed:
            _drop_lines_after(run_dir / LOG_NAME, initial_frames)
        self.writer = SummaryWriter(str(run_dir / "tb"), purge_step=initial_frames if resumed else None)
        # Lines are appended whole or not at all: a full disk never leaves half a line for a resume to read.
        self.jsonl = os.open(run_dir / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
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
            self._append(fields)

    def log(self, frames: int, metrics: dict[str, float]) -> None:
        if not self.enabled:
            return
        for key, value in metrics.items():
            if value is not None and math.isfinite(value):
                self.writer.add_scalar(key, value, frames)
        self._append({"frames": frames, **metrics})
        if self.wandb_run is not None:
            finite = {k: v for k, v in metrics.items() if v is not None and math.isfinite(v)}
            self.wandb_run.log({"frames": frames, **finite})
        shown = {
            "fps": f"{metrics.get('perf/fps', 0):.0f}",
            "spl": _fmt(metrics.get("episode/spl")),
            "success": _fmt(metrics.get("episode/success")),
            "reward": _fmt(metrics.get("episode/episode_return")),
        }
        self.bar.set_postfix({k: v for k, v in shown.items() if v}, refresh=False)

    def _append(self, line: dict) -> None:
        append_whole(self.jsonl, (json.dumps(line) + "\n").encode(), self.run_dir / LOG_NAME)

    def advance(self, frames: int) -> None:
        if self.enabled:
            self.bar.update(frames - self.bar.n)

    def close(self) -> None:
        if self.enabled:
            self.bar.close()
            self.writer.close()
            os.close(self.jsonl)
            if self.wandb_run is not None:
                self.wandb_run.finish()


def _start_wandb(settings: WandbConfig, run_dir: Path, config: dict | None):
    """A W&B run for this run folder: the one started before when resuming (its id is kept in the folder),
    with every scalar plotted against frames rather than W&B's own step counter, which a resume from a
    checkpoint would have to rewind."""
    try:
        import wandb
    except ImportError:
        raise ConfigError(
            "wandb.project", settings.project, "unset, or install W&B: pip install 'navzoo[wandb]'"
        ) from None
    id_file = run_dir / WANDB_ID_NAME
    run_id = id_file.read_text().strip() if id_file.is_file() else None  # None: W&B makes one
    mode = settings.mode
    assert mode is None or mode in WANDB_MODES  # WandbConfig refuses any other
    run = wandb.init(
        project=settings.project,
        entity=settings.entity,
        name=settings.name or run_dir.resolve().name,
        group=settings.group,
        tags=list(settings.tags),
        mode=mode,
        dir=str(run_dir),
        config=config,
        id=run_id,
        resume="allow",
    )
    id_file.write_text(run.id + "\n")
    run.define_metric("frames")
    run.define_metric("*", step_metric="frames")
    return run


def _fmt(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.3f}"


def _drop_lines_after(path: Path, frames: int) -> None:
    if not path.is_file():
        return
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line).get("frames", 0) <= frames]
    if len(kept) != len(lines):
        tmp = temporary_path(path)
        with removed_on_failure(tmp, path):
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
