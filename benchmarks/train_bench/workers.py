"""Section `workers`: one preset with 1 and more workers (same per-worker config), and the speed-up."""

from __future__ import annotations

import torch

from train_bench.runner import Runner
from train_bench.sizes import CORES, sizing
from train_bench.tables import TIME_SPLIT, fps, print_notes, print_table, size


def section_workers(runner: Runner, args) -> dict:
    preset = args.workers_preset
    overrides, warmup, updates, note = sizing(preset, runner.device, args)
    rows = []
    for workers in args.workers:
        print(f"[{runner.device}] workers: {preset} with {workers} worker(s) ...", flush=True)
        rows.append(runner.train(preset, overrides, workers, warmup, updates))
    base = next((r for r in rows if r["workers"] == 1 and "error" not in r), None)
    for row in rows:
        if base is not None and "error" not in row:
            row["speedup"] = row["fps"] / base["fps"]
            row["efficiency"] = row["speedup"] / row["workers"]
    print_table(
        f"workers ({runner.device}, {preset}, same per-worker config)",
        [
            ("workers", lambda r: r["workers"]),
            ("threads/worker", lambda r: r["threads_per_worker"]),
            ("size per worker", size),
            ("frames/update", lambda r: r["frames_per_update"]),
            ("frames/s", fps()),
            ("speed-up vs 1", lambda r: f"{r['speedup']:.2f}x"),
            ("per-worker efficiency", lambda r: f"{100 * r['efficiency']:.0f}%"),
            *TIME_SPLIT,
        ],
        rows,
    )
    workers_max = max(args.workers)
    notes = [f"frames/s is the aggregate of all workers; {CORES} CPU cores split between the workers"]
    if runner.device == "cuda":
        notes.append(
            f"{torch.cuda.device_count()} GPU(s): workers share them round-robin by local rank (with more "
            "workers than GPUs the runs use distributed.backend=gloo, as NCCL needs one GPU per rank)"
        )
    else:
        notes.append(
            "on CPU every row uses all the cores (threads split between workers), so the speed-up compares "
            "processes with threads on the same hardware rather than adding hardware"
        )
        if workers_max > CORES:
            notes.append(f"{workers_max} workers on {CORES} cores oversubscribe the CPU")
    if note:
        notes.append(note)
    print_notes(notes)
    return {"rows": rows, "notes": notes}
