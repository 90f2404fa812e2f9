"""Where commands write: never over a model, a run or other files unless the user says so, and never over
what the command reads.

`navzoo train`, `navzoo finetune`, `navzoo convert` and `navzoo push` call `check_destination` before writing
anything. With `overwrite=True` they write their own files into the folder; they never delete anything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from navzoo.errors import ConfigError

SHOWN = 4  # file names listed in the message


def check_destination(
    path: str | Path,
    *,
    overwrite: bool,
    option: str = "--overwrite",
    sources: Iterable[str | Path] = (),
    folder: bool = True,
) -> None:
    """ConfigError if `path` is a file, or a folder that holds anything, unless `overwrite` is set; and, even
    with `overwrite`, if it is a file where a folder is expected (`folder`) or the other way round, or if it
    is, holds or lies inside one of `sources` (what the command reads while it writes).

    `option` is how the caller's user says "overwrite" (a command-line flag or a keyword argument).
    """
    path = Path(path)
    _check_apart(path, sources)
    if not path.exists():
        return
    if folder and not path.is_dir():
        raise ConfigError(
            "destination",
            str(path),
            f"a folder, and it is a file ({option} writes files into a folder, never over a file): remove "
            "it or choose another path",
        )
    if not folder and path.is_dir():
        raise ConfigError(
            "destination", str(path), f"a file, and it is a folder ({option} never replaces a folder)"
        )
    if overwrite:
        return
    if path.is_file():
        raise ConfigError(
            "destination", str(path), f"a path that does not exist yet (it is a file; {option} replaces it)"
        )
    held = sorted(p.name for p in path.iterdir())
    if not held:
        return
    what = (
        "a model (config.json + model.safetensors)"
        if {"config.json", "model.safetensors"} <= set(held)
        else "files"
    )
    shown = ", ".join(held[:SHOWN]) + (f" and {len(held) - SHOWN} more" if len(held) > SHOWN else "")
    raise ConfigError(
        "destination",
        str(path),
        f"a new or empty folder: it holds {what} ({shown}). Choose another folder, or pass {option} to write "
        "into it anyway (files of the same names are replaced; nothing else is deleted)",
    )


def _check_apart(path: Path, sources: Iterable[str | Path]) -> None:
    """Refuse a destination that is, holds or lies inside a source: writing there would replace or bury
    what is being read, whatever `overwrite` says."""
    target = path.resolve()
    for source in sources:
        read = Path(source).resolve()
        if target == read or target.is_relative_to(read) or read.is_relative_to(target):
            where = "is" if target == read else "lies inside" if target.is_relative_to(read) else "holds"
            raise ConfigError(
                "destination",
                str(path),
                f"a path apart from what the command reads: it {where} {source}; choose another path",
            )
