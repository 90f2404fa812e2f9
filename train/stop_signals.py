"""Stopping a run from outside: SIGTERM and SLURM's SIGUSR1 ask every worker to finish the current update,
write a checkpoint and exit; after SIGUSR1 the SLURM job is put back in the queue, and its next start resumes
from that checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)
REQUEUE_SIGNAL = "SIGUSR1"


def catch_stop_signals(stop: Callable[[int], None]) -> dict[int, Any]:
    """Call `stop(signum)` on SIGTERM and SIGUSR1; returns the handlers they replace, for restore_handlers
    at the end of the run: a process that goes on after train() must stop on SIGTERM again."""
    return {signum: signal.signal(signum, lambda signum, _frame: stop(signum)) for signum in STOP_SIGNALS}


def restore_handlers(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def requeue_slurm_job() -> None:
    """Put this SLURM job back in the queue; its next start resumes from the checkpoint just written."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return
    try:
        subprocess.run(["scontrol", "requeue", job], check=True)
        print(f"requeued SLURM job {job}", flush=True)
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"could not requeue SLURM job {job} ({err}); resubmit it with --resume", flush=True)
