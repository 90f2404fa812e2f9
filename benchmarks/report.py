"""What every benchmark script prints and saves: the machine it ran on, a Markdown table, and JSON."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from navzoo.train.machine import describe_machine

BENCHMARKS = Path(__file__).parent
RESULTS = BENCHMARKS / "results"
MISSING = "-"  # a cell without a value


def machine_info(device: str = "cpu") -> dict[str, Any]:
    """CPU model and cores (and the GPUs on CUDA), the library versions that decide the speed and the
    navzoo commit measured: the machine as a trained model records it (describe_machine), and more."""
    info: dict[str, Any] = {"cpu": _cpu_name(), **describe_machine(device)}
    info["torch_threads"] = torch.get_num_threads()
    try:
        import numba

        info["numba"] = numba.__version__
    except ImportError:
        pass
    if "gpu" in info:
        info["gpu_count"] = torch.cuda.device_count()
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        info["navzoo_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=BENCHMARKS,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
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
    """A Markdown table, its columns padded to line up in a terminal. Numbers get thousands separators,
    floats below 100 two decimals, None is MISSING; a function may return the cell's text instead."""
    table = [[header for header, _ in columns]]
    table += [[_format(get(row) if callable(get) else row.get(get)) for _, get in columns] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) + " |"
        for line in table
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _format(value: Any) -> str:
    if value is None:
        return MISSING
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


def run_in_child(script: str, spec: dict, **run_args: Any) -> dict | None:
    """Run `script --one <spec as JSON>` in a Python process of its own (`run_args` go to subprocess.run)
    and return the JSON its last line prints; None, with a line saying why, if it failed."""
    command = [sys.executable, os.path.abspath(script), "--one", json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, **run_args)
    if done.returncode != 0:
        print(f"  failed: {spec}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])
