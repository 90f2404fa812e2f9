"""What every benchmark script prints and saves: the machine it ran on, a Markdown table, and JSON."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).parent / "results"


def machine_info(device: str = "cpu") -> dict[str, Any]:
    """CPU model and cores (and the GPU on CUDA), with the library versions that decide the speed."""
    info: dict[str, Any] = {
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }
    try:
        import numba

        info["numba"] = numba.__version__
    except ImportError:
        pass
    if device.startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


Column = tuple[str, str | Callable[[dict], Any]]  # (header, row key or function of the row)


def markdown_table(columns: Sequence[Column], rows: Sequence[dict]) -> str:
    """A Markdown table; numbers get thousands separators, floats below 100 two decimals."""
    lines = ["| " + " | ".join(header for header, _ in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [_format(get(row) if callable(get) else row.get(get)) for _, get in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _format(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"
    return str(value)


def write_json(name: str, machine: dict[str, Any], results: Any, out: str | Path | None = None) -> Path:
    """Write {"machine": ..., "results": ...} to `out` (default benchmarks/results/<name>.json)."""
    path = Path(out) if out is not None else RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    return path
