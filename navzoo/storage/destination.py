"""Where commands write: never over a model, a run or other files unless the user says so.

`navzoo train`, `navzoo finetune` and `navzoo convert` call `check_destination` before writing anything.
With `overwrite=True` they write their own files into the folder; they never delete anything else.
"""

from __future__ import annotations

from pathlib import Path

from navzoo.errors import ConfigError

SHOWN = 4  # file names listed in the message


def check_destination(path: str | Path, *, overwrite: bool, option: str = "--overwrite") -> None:
    """ConfigError if `path` is a file, or a folder that holds anything, unless `overwrite` is set.

    `option` is how the caller's user says "overwrite" (a command-line flag or a keyword argument).
    """
    path = Path(path)
    if not path.exists() or overwrite:
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
