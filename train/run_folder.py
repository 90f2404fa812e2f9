"""A training run's folder before the first update: a new run needs a new or empty folder (or overwrite),
gets its config as train_config.yaml, and a resumed one is cleaned of a killed run's temporaries."""

from __future__ import annotations

from pathlib import Path

import yaml

from navzoo.errors import ConfigError
from navzoo.storage.destination import check_destination
from navzoo.train import checkpoint as ckpt
from navzoo.train.config import TrainConfig

CONFIG_FILE = "train_config.yaml"
LOCK_FILE = ".lock"  # held by the process training in the folder (navzoo.train.run_lock)


def check_new_run(run_dir: Path, overwrite: bool) -> None:
    """ConfigError unless a new run may start in `run_dir`."""
    if ckpt.latest_checkpoint(run_dir) is not None:
        raise ConfigError(
            "run_dir",
            str(run_dir),
            "a new folder, or pass --resume to continue the run saved there",
        )
    if run_dir.is_dir() and [p.name for p in run_dir.iterdir()] == [LOCK_FILE]:
        return  # a run that stopped before writing anything left only its lock file: the folder is empty
    check_destination(run_dir, overwrite=overwrite)


def prepare_run_folder(
    run_dir: Path,
    config: TrainConfig,
    files: dict[str, str],
    resumed_from: Path | None,
    skipped: list[str],
    world_size: int,
) -> None:
    """On the main worker: a new run's folder with its config and `files` (name -> text); a resumed run's
    without temporaries, saying which damaged checkpoints (`skipped`) it passed over."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if resumed_from is None:
        files = {CONFIG_FILE: yaml.safe_dump(config.to_dict(), sort_keys=False), **files}
        for name, text in files.items():
            (run_dir / name).write_text(text)
    else:
        ckpt.remove_stale_temporaries(run_dir)
        ckpt.set_aside_newer(run_dir, resumed_from)
        for reason in skipped:
            print(
                f"skipped a damaged checkpoint: {reason}; resuming from {resumed_from.name} (the damaged "
                "file is kept with the suffix .damaged)",
                flush=True,
            )
    if absent := sorted(r for r in config.overridden_ranks() if r >= world_size):
        # A preset made for several workers still runs on fewer, without those workers' scenes.
        print(
            f"warning: rank_sim_overrides name worker ranks {absent} and this run has "
            f"{world_size} worker(s): their settings are not used; start it with torchrun "
            f"--nproc-per-node {absent[-1] + 1} to train with them",
            flush=True,
        )
