"""Locks that keep two processes from writing into one folder: a run folder, a cache several processes fill.

A lock is an OS lock (`fcntl.flock`) on a lock file, so the kernel releases it when its holder exits, also
on kill -9; the file itself stays and only says who held it last. The holder writes its PID and host into
the file, so a process that is refused can name the one in its way. A process that opens the lock file
again (a second `hold` in the same process included) is refused like any other.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path
from types import TracebackType

from navzoo.errors import NavzooError


class FolderInUseError(NavzooError):
    """Another process holds the lock of a folder this process would write into."""


class HeldLock:
    """A lock this process holds until `release()` (or the end of its `with` block, or the process)."""

    def __init__(self, fd: int, path: Path):
        self.fd: int | None = fd
        self.path = path

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor releases the flock
            self.fd = None

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def hold(lock_file: Path, what: str, *, wait: bool = False) -> HeldLock:
    """Take the lock of `lock_file` (created if missing). `wait`: block until its holder releases it;
    otherwise FolderInUseError at once, naming `what` is locked and the process that holds it."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by programs this one execs
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise _in_use(lock_file, what) from None
    except BaseException:
        os.close(fd)
        raise
    # The holder's name is for the message a refused process prints; the flock is the lock, so a holder
    # that cannot write it (a full disk) still holds the lock rather than leaking it.
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    return HeldLock(fd, lock_file)


def refuse_if_held(lock_file: Path, what: str) -> None:
    """FolderInUseError if another process holds `lock_file`; creates nothing, so a folder that is then
    refused for another reason is left as it was."""
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except FileNotFoundError:
        return  # never locked, so nobody holds it
    try:
        # A shared lock is refused while anyone holds the exclusive one, and needs no write access.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _in_use(lock_file, what) from None
    finally:
        os.close(fd)


def _in_use(lock_file: Path, what: str) -> FolderInUseError:
    holder = _holder(lock_file)
    return FolderInUseError(
        f"{what} is in use: {holder} holds its lock ({lock_file}). Wait for it to finish or stop it, or "
        "choose another folder"
    )


def _holder(lock_file: Path) -> str:
    """`process PID on HOST`, as the holder wrote it; a holder that has not written yet is unnamed."""
    try:
        pid, host = lock_file.read_text().split()
    except (OSError, ValueError):
        return "another process"
    return f"process {pid}" if host == socket.gethostname() else f"process {pid} on {host}"
