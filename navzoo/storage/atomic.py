"""Writing files so that a failure leaves the previous version and no half-written one behind.

A file is written to a temporary name (`.<name>.tmp-<pid>`) next to it and renamed over it once complete.
When the writing fails, the temporary is removed, and an OS error behind the failure is raised as an
OSError naming the file: torch reports a full disk as "unexpected pos" with the OSError only in the chain,
safetensors as "(os error 28)" in its message, and the command line turns an OSError into one line
(navzoo.cli.os_errors). A process killed while writing leaves its temporary; `stale_temporaries` finds
those whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

_OS_ERROR_IN_MESSAGE = re.compile(r"\(os error (\d+)\)")  # how Rust's std::io::Error shows its errno
_PID = re.compile(r"\.tmp-(\d+)$")


def temporary_path(path: Path) -> Path:
    """The name this process writes `path` under until it is complete."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


@contextlib.contextmanager
def removed_on_failure(temporary: Path, destination: Path) -> Iterator[None]:
    """Remove `temporary` (a file or a folder) if the block fails; a failure caused by an OS error (a full
    disk, a quota) is raised as an OSError of that errno naming `destination`."""
    try:
        yield
    except BaseException as failure:
        if temporary.is_dir():
            shutil.rmtree(temporary, ignore_errors=True)
        else:
            temporary.unlink(missing_ok=True)
        code = _errno_behind(failure) if isinstance(failure, Exception) else None
        if code is None:
            raise
        raise OSError(code, os.strerror(code), str(destination)) from failure


def append_whole(fd: int, data: bytes, path: Path) -> None:
    """Append `data` to the file open at `fd` (O_APPEND) entirely or not at all: a failed write is cut
    off, so a reader never meets half a line. The OSError names `path`."""
    end = os.lseek(fd, 0, os.SEEK_END)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    except OSError as err:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, end)
        raise OSError(err.errno, err.strerror, str(path)) from None


def stale_temporaries(folder: Path, pattern: str) -> list[Path]:
    """The temporaries in `folder` matching `pattern` whose writing process no longer runs on this host;
    those of live processes are still being written."""
    found = sorted(folder.glob(pattern)) if folder.is_dir() else []
    return [path for path in found if (pid := _PID.search(path.name)) and not _alive(int(pid.group(1)))]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _errno_behind(failure: Exception) -> int | None:
    """The errno of the OS error that caused `failure`, as raised or chained, or named in its message."""
    seen: BaseException | None = failure
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno is not None:
            return seen.errno
        if found := _OS_ERROR_IN_MESSAGE.search(str(seen)):
            return int(found.group(1))
        seen = seen.__cause__ or seen.__context__
    return None
