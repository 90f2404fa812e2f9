"""Child processes of the benchmark: training runs and the measurements that need a process of their own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ENTRY = Path(__file__).resolve().parent.parent / "train_throughput.py"  # runs a child given its flag
STOP_GRACE_S = 120.0  # after a timeout: time for a run to stop cleanly before it is killed


def run_process(cmd: list[str], timeout: float | None, **kwargs) -> tuple[int, str | None, str | None]:
    """Run a command in its own process group. On a timeout (or Ctrl-C) SIGTERM it, which makes torchrun
    stop its workers (they run in sessions of their own) and the trainer stop after its current update;
    whatever is left of the group after STOP_GRACE_S is killed."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        raise
    return proc.returncode, out, err


def child(extra: list[str], timeout: float | None) -> dict:
    """Run the benchmark script with a hidden child flag; its last stdout line is a JSON result."""
    try:
        returncode, out, err = run_process(
            [sys.executable, str(ENTRY), *extra],
            timeout,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = out.strip().splitlines()
    if returncode != 0 or not lines:
        error = f"exit status {returncode}:\n{(out + err)[-3000:]}"
        print(f"  ! child failed: {error}", flush=True)
        return {"error": error}
    return json.loads(lines[-1])
