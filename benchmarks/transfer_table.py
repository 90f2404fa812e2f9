"""The README's transfer table from `navzoo finetune --setting all` results (sweep.json files).

    python benchmarks/transfer_table.py benchmarks/results/transfer/*.json

One row per base model and setting: Flee D_T and Explore cells at the start and at the end of training,
with their 95% intervals, trainable parameters and training wall time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from report import markdown_table

TASKS = ("flee", "explore")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "results", nargs="+", type=Path, help="sweep.json files (one per task and base model)"
    )
    args = parser.parse_args()
    sweeps = [json.loads(path.read_text()) for path in args.results]
    header = ["base model", "setting", "trainable params"]
    header += [f"{task.capitalize()} {cell}" for task in TASKS for cell in ("start", "end", "train time")]
    rows = []
    bases = list(dict.fromkeys(s["base_model"] for s in sweeps))
    for base in bases:
        by_task = {s["task"]: s for s in sweeps if s["base_model"] == base}
        settings = list(dict.fromkeys(k for s in by_task.values() for k in s["settings"]))
        for setting in settings:
            entries = [by_task[t]["settings"].get(setting) if t in by_task else None for t in TASKS]
            first = next(e for e in entries if e is not None)
            params = first.get("trainable_parameters")
            cells = [base, first["label"], f"{params:,}" if params else "–"]
            for entry in entries:
                cells += _cells(entry)
            rows.append(dict(zip(header, cells, strict=True)))
    print(markdown_table([(name, name) for name in header], rows))


def _cells(entry: dict | None) -> list[str]:
    if entry is None:
        return ["–", "–", "–"]
    if entry["status"] != "done":
        return ["not run", "not run", "–"]
    start, end = entry["curve"][0], entry["curve"][-1]
    minutes = entry["train_wall_s"] / 60
    return [_value(start), _value(end), f"{minutes:.0f} min"]


def _value(point: dict) -> str:
    digits = 3 if point["metric"] <= 1 else 1
    return f"{point['metric']:.{digits}f} ± {point['ci95']:.{digits}f}"


if __name__ == "__main__":
    main()
