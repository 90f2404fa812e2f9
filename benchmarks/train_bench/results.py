"""The JSON file of the benchmark: one per device, holding the latest result of every section measured."""

from __future__ import annotations

import json
from pathlib import Path

from train_bench.targets import TARGETS

REPO = Path(__file__).resolve().parents[2]


def write_results(args, device: str, machine: dict, results: dict) -> None:
    """The sections of this run, merged into the JSON file of earlier runs on `device`."""
    if args.out:
        out = Path(args.out)
    elif args.quick:
        out = REPO / "runs" / "benchmarks" / f"train_throughput-{device}-quick.json"
    else:
        out = REPO / "benchmarks" / "results" / f"train_throughput-{device}.json"
    data = {}
    if out.is_file():  # keep the sections measured by earlier invocations
        try:
            data = json.loads(out.read_text())
        except json.JSONDecodeError:
            data = {}
    sections = data.get("sections", {})
    machines = data.get("machines", {})
    for name, result in results.items():
        sections[name] = result
        machines[name] = machine
    argv = {k: v for k, v in vars(args).items() if not k.startswith("child")}
    data = {"machine": machine, "machines": machines, "args": argv, "targets": TARGETS, "sections": sections}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"\nwrote {out}")
