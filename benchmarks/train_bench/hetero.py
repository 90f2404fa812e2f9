"""Section `hetero`: 2 or more workers, the last one on costlier scenes, against all workers on the same
scenes, without preemption and with it."""

from __future__ import annotations

import json

import torch
import yaml

from train_bench.processes import child
from train_bench.runner import Runner
from train_bench.sizes import CORES, sizing, threads_per_worker
from train_bench.tables import TIME_SPLIT, fps, print_notes, print_table, size
from train_bench.targets import TARGETS, verdict


def effective_sync_frac(frac: float, workers: int) -> tuple[float, str | None]:
    """A preempting sync_frac for `workers`: a straggler stops once sync_frac * workers others are done,
    so anything above (workers - 1) / workers never preempts and is replaced by that value."""
    most = (workers - 1) / workers
    if frac < 1.0 and frac > most:
        return most, (
            f"sync_frac {frac:g} with {workers} workers never preempts (it needs {frac:g} x {workers} = "
            f"{frac * workers:g} finished workers, so all {workers}): measured with sync_frac {most:g} "
            f"instead, the largest value that lets {workers - 1} finished worker(s) stop the rest"
        )
    return frac, None


def section_hetero(runner: Runner, args) -> dict:
    from navzoo.train.config import load_config

    preset, workers = args.hetero_preset, args.hetero_workers
    overrides, warmup, updates, note = sizing(preset, runner.device, args)
    costly = yaml.safe_load(args.hetero_rank_sim)
    rank = workers - 1
    flow = yaml.safe_dump({rank: costly}, default_flow_style=True, width=10**6).strip()
    rank_override = f"rank_sim_overrides={flow}"
    config = load_config(preset, [*overrides, *args.set, rank_override])  # checks the override early
    notes = [
        f"heterogeneous: rank {rank} of {workers} simulates {costly} (`{rank_override}`); homogeneous: "
        f"every rank the preset's scenes ({', '.join(config.sim.scene_families)})",
        f"{threads_per_worker(workers)} thread(s) per worker on {CORES} cores"
        + (" (oversubscribed)" if workers > CORES and runner.device == "cpu" else ""),
    ]
    if runner.device == "cuda" and workers > torch.cuda.device_count():
        notes.append(f"{workers} workers share {torch.cuda.device_count()} GPU(s): distributed.backend=gloo")
    print(f"[{runner.device}] hetero: simulator cost of each rank's scenes ...", flush=True)
    probe = sim_probe(config.sim_for_rank(0), config.sim_for_rank(rank), runner.device, args)
    if "error" not in probe:
        notes.append(
            f"simulator alone (random actions incl. stop, 1 thread, {config.sim.num_envs} envs): rank 0 "
            f"scenes {probe['base_fps']:,.0f} frames/s, rank {rank} scenes {probe['costly_fps']:,.0f} "
            f"frames/s ({probe['base_fps'] / probe['costly_fps']:.2f}x the cost per frame); the straggler "
            "penalty is bounded by the simulator's share of the frame time"
        )
    rows, fracs = [], []
    for frac in args.sync_fracs:
        used, why = effective_sync_frac(frac, workers)
        if why:
            notes.append(why)
        fracs.append(used)
        for workload in ("homogeneous", "heterogeneous"):
            extra = [f"distributed.sync_frac={used}"] + ([rank_override] if workload != "homogeneous" else [])
            print(f"[{runner.device}] hetero: {workload}, sync_frac {used:g} ...", flush=True)
            row = runner.train(preset, [*overrides, *extra], workers, warmup, updates)
            rows.append({**row, "workload": workload, "sync_frac": used, "requested_sync_frac": frac})
    ratios = {}
    for frac in fracs:
        pair = {r["workload"]: r for r in rows if r["sync_frac"] == frac and "error" not in r}
        if len(pair) == 2:
            ratios[frac] = pair["heterogeneous"]["fps"] / pair["homogeneous"]["fps"]
            pair["heterogeneous"]["ratio"] = ratios[frac]
    print_table(
        f"hetero ({runner.device}, {preset}, {workers} workers)",
        [
            ("workload", lambda r: r["workload"]),
            ("sync_frac", lambda r: f"{r['sync_frac']:g}"),
            ("size per worker", size),
            ("frames/s", fps()),
            ("frames/s (total)", fps("fps_total")),
            ("hetero / homogeneous", lambda r: f"{r['ratio']:.2f}"),
            ("steps mean/min", lambda r: f"{r['steps_mean']:.1f}/{r['steps_min']:.0f} of {r['num_steps']}"),
            ("preempted workers", lambda r: f"{r['preempted_workers']:.2f}"),
            *TIME_SPLIT,
        ],
        rows,
    )
    if note:
        notes.append(note)
    print_notes(notes)
    result = {"rows": rows, "probe": probe, "notes": notes, "ratios": {str(k): v for k, v in ratios.items()}}
    preempting = [f for f in ratios if f < 1.0]
    if preempting:
        value = ratios[min(preempting)]
        check = verdict(value, TARGETS["hetero_ratio"], True, args.quick)
        print(
            f"\ntarget: with preemption (sync_frac {min(preempting):g}) the heterogeneous workload reaches "
            f">= {TARGETS['hetero_ratio']:.0%} of the homogeneous throughput: {100 * value:.1f}% -> {check}"
        )
        result["target_hetero_ratio"] = {"value": value, "min": TARGETS["hetero_ratio"], "verdict": check}
    return result


def sim_probe(base, costly, device: str, args) -> dict:
    """Simulator-only frames/s of rank 0's and the costly rank's SimConfig (in a child process)."""
    spec = {
        "base": base.to_dict(),
        "costly": costly.to_dict(),
        "device": device,
        "seconds": 1.0 if args.quick else args.probe_seconds,
    }
    return child(["--child-probe", json.dumps(spec)], args.timeout)
