"""navzoo.storage.locks with real processes: a holder in another process refuses this one at once and is
named by its PID; the lock is released when the holder is killed with SIGKILL; a waiting lock waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from navzoo.storage.locks import FolderInUseError, hold, refuse_if_held

HOLDER = """
import sys, time
from pathlib import Path
from navzoo.storage.locks import hold
lock = hold(Path(sys.argv[1]), "the folder")
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path):
    """Start a process that holds tmp_path/.lock; yields (process, lock file); killed at the end."""
    lock_file = tmp_path / ".lock"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_file)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc, lock_file
    finally:
        proc.kill()
        proc.wait()


def test_a_lock_held_by_another_process_is_refused_at_once_naming_it(holder):
    proc, lock_file = holder
    started = time.monotonic()
    with pytest.raises(FolderInUseError) as err:
        hold(lock_file, f"the folder {lock_file.parent}")
    assert time.monotonic() - started < 1
    assert f"process {proc.pid} " in str(err.value) and str(lock_file.parent) in str(err.value)
    with pytest.raises(FolderInUseError, match=f"process {proc.pid} "):
        refuse_if_held(lock_file, "the folder")


def test_a_killed_holder_releases_the_lock(holder):
    proc, lock_file = holder
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    refuse_if_held(lock_file, "the folder")
    with hold(lock_file, "the folder") as held:
        assert lock_file.read_text().split()[0] == str(os.getpid())
    assert held.fd is None


def test_a_waiting_lock_waits_for_the_holder(holder):
    proc, lock_file = holder
    got = threading.Event()

    def take() -> None:
        with hold(lock_file, "the cache", wait=True):
            got.set()

    thread = threading.Thread(target=take)
    thread.start()
    assert not got.wait(1.0)
    proc.kill()
    assert got.wait(30)
    thread.join(30)


def test_a_lock_in_this_process_refuses_a_second_one(tmp_path):
    lock_file = tmp_path / ".lock"
    with hold(lock_file, "the folder"), pytest.raises(FolderInUseError, match=f"process {os.getpid()} "):
        hold(lock_file, "the folder")
    hold(lock_file, "the folder").release()


def test_asking_whether_a_folder_is_held_creates_nothing(tmp_path):
    refuse_if_held(tmp_path / ".lock", "the folder")
    assert list(Path(tmp_path).iterdir()) == []
