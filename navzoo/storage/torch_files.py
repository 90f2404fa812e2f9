"""Reading PyTorch files written by others or by earlier runs: tensors and plain containers only.

Every `.pth` / `.pt` navzoo reads goes through `load_weights_only`, so a file that weights-only loading
refuses is always refused the same way, and torch's advice to turn weights-only loading off (which would
run whatever code the file carries) is never passed on.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import torch

from navzoo.errors import UnsafeCheckpointError


def load_weights_only(path: str | Path) -> Any:
    """`torch.load(path, weights_only=True)` on the CPU; UnsafeCheckpointError if the file holds anything
    but tensors and plain containers; ValueError if its bytes are no pickle of tensors at all. Other
    failures (missing, truncated) propagate as torch raises them."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        # Only code can be reached through a GLOBAL; other refusals are bytes that are not a pickle at all
        # (text, another format), which the caller reports as an unreadable file.
        found = re.search(r"GLOBAL ([\w.]+)", str(err))
        if found is None:
            detail = re.search(r"WeightsUnpickler error:\s*(.+)", str(err))
            reason = detail.group(1) if detail else "unreadable data"
            raise ValueError(f"not pickled tensors ({reason})") from None
        named = f" (it names {found.group(1).rstrip('.')})"
        raise UnsafeCheckpointError(
            f"refused {path}: this file holds pickled objects other than tensors, which navzoo never "
            f"unpickles{named}. A file that should hold only tensors may be damaged: get it again."
        ) from None
