"""One writer per run folder: the run training in a folder holds its lock (navzoo.storage.locks), so a
second `navzoo train`, `train --resume` or `navzoo finetune` into it is refused at once, naming the process
in its way, before it builds anything or touches a file.

Under torchrun the workers of one run share the folder: the main worker takes the lock for all of them and
tells the others whether it got it, so the workers of a second job are all refused while the first job's
write freely. The OS releases the lock when the main worker exits, also on kill -9, so a resume after a
crash, or torchrun's restart of the workers, takes it again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import torch.distributed as dist

from navzoo.errors import NavzooError
from navzoo.storage.locks import HeldLock, hold, refuse_if_held
from navzoo.train.distributed import Workers
from navzoo.train.run_folder import LOCK_FILE, check_new_run


class RunFolderRefused(NavzooError):
    """Raised by the workers other than the main one when the main worker could not start the run."""


@contextlib.contextmanager
def claimed_run_folder(run_dir: Path, workers: Workers, resume: bool, overwrite: bool) -> Iterator[None]:
    """Hold `run_dir` for this run while the block runs; a new run (not `resume`) also needs a folder it
    may start in (check_new_run). Every worker enters it together, and all are refused together."""
    held: HeldLock | None = None
    refusal: Exception | None = None
    if workers.is_main:
        try:
            held = _claim(run_dir, resume, overwrite)
        except (NavzooError, OSError) as err:
            refusal = err
    if workers.distributed:
        outcome = [None if refusal is None else str(refusal)]
        dist.broadcast_object_list(outcome, src=0)
        if not workers.is_main and outcome[0] is not None:
            raise RunFolderRefused(f"the main worker did not start the run in {run_dir}: {outcome[0]}")
    if refusal is not None:
        raise refusal
    try:
        yield
    finally:
        if held is not None:
            held.release()


def refuse_if_in_use(run_dir: Path) -> None:
    """FolderInUseError if a run trains in `run_dir`: a command that would write into it reads it only after
    this, since a run that has just started may not have written its config yet."""
    refuse_if_held(run_dir / LOCK_FILE, f"the run folder {run_dir}")


def _claim(run_dir: Path, resume: bool, overwrite: bool) -> HeldLock:
    # A folder in use is named as such first; nothing is created in a folder that is then refused.
    refuse_if_in_use(run_dir)
    if not resume:
        check_new_run(run_dir, overwrite)
    run_dir.mkdir(parents=True, exist_ok=True)
    return hold(run_dir / LOCK_FILE, f"the run folder {run_dir}")  # refused if another process took it since
