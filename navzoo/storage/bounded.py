"""Reading a whole file with a bound on its size. A file of gigabytes where navzoo expects kilobytes is a
mistake or an attack, and a few kilobytes of gzip can inflate to gigabytes: gzip is decompressed as a
stream, and reading stops one byte past the bound, before the excess is held in memory."""

import gzip
from collections.abc import Callable
from pathlib import Path

from navzoo.errors import NavzooError

MAX_CONFIG_BYTES = 1 << 20  # the most read of a config file: navzoo writes a few KB
CONFIG_REASON = "(a config is a few KB): check that it is the config file meant"


def read_bounded(
    path: str | Path,
    limit: int,
    what: str,
    reason: str = CONFIG_REASON,
    *,
    gzipped: bool | None = None,
    error: Callable[[str], Exception] = NavzooError,
) -> bytes:
    """The bytes of `path`, decompressed if `gzipped` (default: if its name ends in .gz). If there are more
    than `limit`, `error(message)`: the message names the file (`what`, e.g. "episode file <path>") and the
    limit, then gives `reason`: the usual size and what to do (by default, a config file's).
    Unreadable or damaged files raise what `open` and `gzip` raise (OSError, EOFError, zlib.error)."""
    path = Path(path)
    gzipped = path.suffix == ".gz" if gzipped is None else gzipped
    with gzip.open(path, "rb") if gzipped else path.open("rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        grows = "decompresses to" if gzipped else "holds"
        raise error(f"{what} {grows} more than {format_size(limit)}, the most read here {reason}")
    return data


def format_size(size: int) -> str:
    """A byte count in MiB ("64 MiB", "0.5 MiB"), or in bytes below 64 KiB."""
    return f"{size / 2**20:g} MiB" if size >= 2**16 else f"{size:,} bytes"
