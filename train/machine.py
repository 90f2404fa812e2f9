"""The machine a run or a measurement ran on, as exported models' provenance and benchmark results record
it."""

from __future__ import annotations

import os
import platform

import torch


def describe_machine(device: torch.device | str) -> dict[str, str]:
    """The platform, Python and torch versions, the CPU cores, and the GPU where `device` is a CUDA one."""
    device = torch.device(device)
    info = {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__}
    info["cpu_count"] = str(os.cpu_count())
    if device.type == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(device)
    return info
