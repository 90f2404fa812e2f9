"""Real small disks for tests of what happens when one fills up: a tmpfs mounted for the test (needs root;
the test is skipped with the reason otherwise), and a filler file that leaves a given number of bytes free."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(folder: Path, size_bytes: int) -> Iterator[Path]:
    """`folder` as the mount point of a tmpfs of `size_bytes`, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill up needs root")
    folder.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(folder)]
    try:
        done = subprocess.run(mount, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        pytest.skip("no mount command to mount a small tmpfs with")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True, timeout=30)


def fill(disk: Path, leave_bytes: int) -> Path:
    """A file that takes all of `disk`'s free space but `leave_bytes` (rounded down to whole pages)."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(free - leave_bytes, 0))
    return filler
