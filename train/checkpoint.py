"""Training checkpoints: one file per checkpoint, written atomically, holding everything to continue.

A checkpoint holds the model, optimiser and loss-scaler states, counters, the resolved config, and for every
worker its simulator state, its recurrent carry (hidden state, previous action, mask) and its RNG states, so
that a resumed run continues exactly where the saved one was. Files are written to a temporary name, synced
and renamed, so a crash never leaves a half-written checkpoint behind under a checkpoint's name (a resumed
run deletes the temporary files a killed one left), and a failed write (a full disk) removes its temporary
and names the file. Only tensors and plain containers are stored, and they are read back weights-only. A
damaged newest checkpoint makes a resume fall back to the one before.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import torch

from navzoo.errors import NavzooError, UnsafeCheckpointError
from navzoo.storage.atomic import removed_on_failure, stale_temporaries, temporary_path
from navzoo.storage.torch_files import load_weights_only

CHECKPOINT_DIR = "checkpoints"
_NAME = re.compile(r"^ckpt-(\d{9})\.pt$")


class CheckpointError(NavzooError):
    """A checkpoint is missing, unreadable or does not fit the run being resumed."""


def checkpoint_path(run_dir: Path, update: int) -> Path:
    return run_dir / CHECKPOINT_DIR / f"ckpt-{update:09d}.pt"


def list_checkpoints(run_dir: Path) -> list[Path]:
    folder = run_dir / CHECKPOINT_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if _NAME.match(p.name))


def save_checkpoint(state: dict[str, Any], run_dir: Path, update: int, keep: int) -> Path:
    """Atomically write checkpoint `update` and delete all but the newest `keep`."""
    path = checkpoint_path(run_dir, update)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    # A full disk makes torch.save fail half-way: the temporary goes, the previous checkpoints stay.
    with removed_on_failure(tmp, path):
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    _fsync_dir(path.parent)
    for old in list_checkpoints(run_dir)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def load_checkpoint(path: Path) -> dict[str, Any]:
    try:
        return load_weights_only(path)
    except UnsafeCheckpointError as err:
        raise CheckpointError(str(err)) from None
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist") from None
    except Exception as err:  # torch raises many kinds of errors on a damaged file
        raise CheckpointError(f"{path} cannot be read ({type(err).__name__}: {err})") from None


def latest_checkpoint(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def load_latest(run_dir: Path) -> tuple[Path, dict[str, Any], list[str]] | None:
    """The newest readable checkpoint of a run, its state, and why each newer one was passed over (a
    damaged file: the run continues from the one before). None if the run has no checkpoint; CheckpointError
    if it has some and none can be read."""
    found = list_checkpoints(run_dir)
    if not found:
        return None
    skipped = []
    for path in reversed(found):
        try:
            return path, load_checkpoint(path), skipped
        except CheckpointError as err:
            skipped.append(str(err))
    raise CheckpointError(f"no checkpoint of {run_dir} can be read: " + "; ".join(skipped))


def set_aside_newer(run_dir: Path, resumed_from: Path) -> list[Path]:
    """Rename the checkpoints newer than `resumed_from` (the damaged ones a resume passed over) to
    `<name>.damaged`: kept for a look, and out of the checkpoints the run prunes by number, where they would
    sort last and make every new checkpoint look old enough to delete."""
    newer = [path for path in list_checkpoints(run_dir) if path.name > resumed_from.name]
    for path in newer:
        path.rename(path.with_name(path.name + ".damaged"))
    return newer


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Delete the half-written checkpoint files killed runs left behind (`.ckpt-*.pt.tmp-<pid>` of a process
    that is gone); a live process's temporary is still being written."""
    stale = stale_temporaries(run_dir / CHECKPOINT_DIR, ".ckpt-*.pt.tmp-*")
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def rng_state(device: torch.device) -> dict[str, torch.Tensor]:
    state = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict[str, torch.Tensor], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
