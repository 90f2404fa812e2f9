"""One writer per run folder, with real processes: while a run trains, a second `navzoo train` (new or
--resume) or `navzoo finetune` into its folder is refused at once, naming the folder and the process that
holds it, and the first run finishes as if nothing happened; once the first is killed with SIGKILL, a resume
takes over, and removes only the temporaries of processes that are gone. Under torchrun the workers of one
job share the folder and a second job is refused.

The first run is tests/train/scripts/train_worker.py with a simulator slowed on one worker, so that it is
still training when the second process has started Python and torch.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from navzoo.storage.locks import FolderInUseError, refuse_if_held
from navzoo.train import checkpoint as ckpt
from navzoo.train.run_folder import LOCK_FILE
from tests.train.test_train_distributed import (
    FRAMES_PER_UPDATE,
    PRESET,
    TINY,
    TRAIN_WORKER,
    _cli,
    _finish,
    _log,
    _newest,
    _run,
    _start,
    _stop_group,
    _torchrun,
    _wait_for_checkpoint,
    _worker_pids,
)

UPDATES = 30
# A transfer from the PointGoal model shipped in the package.
FINETUNE = ["--task", "flee", "--setting", "pointgoal-finetune", "--from", "navzoo-pointnav-rgb"]
SLOW_STEP_S = 0.02  # 30 updates of 16 steps: at least 10 s of training


def _slow_run(run_dir: Path, nproc: int = 1) -> list[str]:
    args = [
        str(TRAIN_WORKER),
        PRESET,
        *TINY,
        f"total_frames={UPDATES * nproc * FRAMES_PER_UPDATE}",
        "--run-dir",
        str(run_dir),
        "--slow-rank=0",
        f"--slow-step-s={SLOW_STEP_S}",
    ]
    return _torchrun(*args, nproc=nproc) if nproc > 1 else [_cli()[0], *args]


def _wait_until_held(run_dir: Path, pid: int, proc, timeout: float = 60) -> None:
    """Until process `pid` (of `proc`, which must not exit first) holds the run folder's lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            refuse_if_held(run_dir / LOCK_FILE, "the run folder")
        except FolderInUseError:
            if (run_dir / LOCK_FILE).read_text().split()[:1] == [str(pid)]:
                return
        time.sleep(0.05)
    pytest.fail(f"process {pid} did not take the lock of {run_dir} in {timeout} s")


def _assert_refused(err: str, run_dir: Path, pid: int) -> None:
    lines = err.strip().splitlines()
    refusals = [line for line in lines if "error:" in line]
    assert refusals and "Traceback" not in err, err
    assert all("in use" in line and str(run_dir) in line and f"process {pid} " in line for line in refusals)


def _assert_one_uninterrupted_run(run_dir: Path, updates: int) -> None:
    rows, events = _log(run_dir)
    assert [r["train/update"] for r in rows] == list(range(1, updates + 1))
    assert [e["event"] for e in events if e["event"] != "checkpoint"] == ["start"]
    assert _newest(run_dir)["counters"]["update"] == updates


def test_a_second_process_on_a_training_run_folder_is_refused_at_once(tmp_path):
    run_dir = tmp_path / "run"
    first = _start(_slow_run(run_dir), tmp_path)
    try:
        _wait_until_held(run_dir, first.pid, first)
        resume = _start(_cli("--run-dir", str(run_dir), "--resume"), tmp_path)
        new = _start(_cli(PRESET, *TINY, "--run-dir", str(run_dir), "--overwrite"), tmp_path)
        finetune = _start(
            [*_cli()[:3], "finetune", *FINETUNE, "--run-dir", str(run_dir), "--overwrite"],
            tmp_path,
            HF_HUB_OFFLINE="1",
        )
        for second in (resume, new, finetune):
            _, err = _finish(second, 60, expect_rc=2)
            _assert_refused(err, run_dir, first.pid)
        assert first.poll() is None, "the first run ended before the others were refused"
        out, _ = _finish(first, 120)
    finally:
        _stop_group(first)
    assert f"done: {UPDATES} updates" in out
    _assert_one_uninterrupted_run(run_dir, UPDATES)


def test_a_run_killed_with_sigkill_leaves_its_folder_to_a_resume(tmp_path):
    run_dir = tmp_path / "run"
    first = _start(_slow_run(run_dir), tmp_path)
    try:
        _wait_for_checkpoint(run_dir, first, timeout=60)
    finally:
        _stop_group(first)  # SIGKILL
    saved = _newest(run_dir)["counters"]["update"]
    more = f"total_frames={(saved + 1) * FRAMES_PER_UPDATE}"
    out, err = _run(_cli(more, "--run-dir", str(run_dir), "--resume"), tmp_path)
    assert f"done: {saved + 1} updates" in out, err
    resumes = [e for e in _log(run_dir)[1] if e["event"] == "resume"]
    assert [e["update"] for e in resumes] == [saved]


def test_a_resume_removes_only_the_temporaries_of_processes_that_are_gone(tmp_path):
    run_dir = tmp_path / "run"
    folder = run_dir / ckpt.CHECKPOINT_DIR
    folder.mkdir(parents=True)
    writing = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        live = folder / f".ckpt-000000004.pt.tmp-{writing.pid}"
        stale = folder / f".ckpt-000000002.pt.tmp-{gone.pid}"
        for path in (live, stale):
            path.write_bytes(b"\0" * 1000)
        assert ckpt.remove_stale_temporaries(run_dir) == [stale]
        assert live.exists() and not stale.exists()
    finally:
        writing.kill()
        writing.wait()


@pytest.mark.slow
def test_a_second_torchrun_job_is_refused_and_the_first_one_s_workers_are_not(tmp_path):
    run_dir = tmp_path / "run"
    first = _start(_slow_run(run_dir, nproc=2), tmp_path)
    try:
        main_worker = _worker_pids(first.pid, 2)[0]
        _wait_until_held(run_dir, main_worker, first)
        second = _start([*_slow_run(run_dir, nproc=2), "--resume"], tmp_path)
        _, err = _finish(second, 90, expect_rc=None)
        assert second.returncode != 0
        assert f"the run folder {run_dir} is in use: process {main_worker} " in err, err
        assert first.poll() is None, "the first job ended before the second was refused"
        out, _ = _finish(first, 180)
    finally:
        _stop_group(first)
    assert f"done: {UPDATES} updates" in out
    _assert_one_uninterrupted_run(run_dir, UPDATES)
