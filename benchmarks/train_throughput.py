"""End-to-end training throughput: frames/s of `navzoo train` and how each update's time splits.

Every navzoo measurement runs the real trainer in its own process (`python -m navzoo train`, or
`python -m torch.distributed.run --standalone` for several workers) for W warm-up plus N measured updates,
then reads the run's log.jsonl: frames/s is the median of `perf/fps` over the measured updates (`total`:
their frames over their summed wall time), the split is the median of `perf/sim_fraction`,
`perf/inference_fraction` and `perf/learning_fraction` (averaged over workers by the trainer). A run stops
at (W + N) x frames-per-update frames; preempted rollouts collect fewer frames, so such runs have more
updates, and every update after the first W is measured. Threads: `torch_threads` = cores / workers.

Sections (`--section`, default all):

    presets  every preset at a size the device can run (see the `size` column and the notes)
    workers  one preset with 1 and 2 workers (same per-worker config): aggregate frames/s and speed-up
    hetero   2 workers, the last one on costlier scenes (`rank_sim_overrides`), against all workers on the
             same scenes, without preemption (sync_frac 1.0) and with it; ratio heterogeneous/homogeneous
    sb3      sb3-contrib's RecurrentPPO on the same simulator (through navzoo's Gymnasium adapter) and
             the same network (navzoo's visual encoder as its features extractor, LSTM of the same size),
             against navzoo's trainer with the same environments and rollout length (optional extra:
             pip install -e '.[bench]')

    python benchmarks/train_throughput.py                          # all sections, CPU (+ CUDA if present)
    python benchmarks/train_throughput.py --quick                  # tiny smoke run of every section
    python benchmarks/train_throughput.py --section sb3 --device cpu --updates 8
    python benchmarks/train_throughput.py --section hetero --hetero-workers 3 --sync-fracs 1.0 0.6

The default sizes take about half an hour for all sections on 2 CPU cores; --quick a few minutes.

Prints a markdown table per section and writes JSON (default benchmarks/results/train_throughput-<device>
.json, sections from earlier invocations kept; --quick writes runs/benchmarks/train_throughput-<device>-
quick.json instead). Timings are only meaningful on an otherwise idle machine: the JSON records the load
average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from report import machine_info
from train_bench import probe_child
from train_bench.hetero import section_hetero
from train_bench.presets import PRESETS, section_presets
from train_bench.results import write_results
from train_bench.runner import Runner
from train_bench.sb3 import section_sb3
from train_bench.sizes import CORES
from train_bench.workers import section_workers

SECTIONS = {
    "presets": section_presets,
    "workers": section_workers,
    "hetero": section_hetero,
    "sb3": section_sb3,
}


def command_line() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--section", nargs="+", choices=[*SECTIONS, "all"], default=["all"], help="what to measure"
    )
    parser.add_argument(
        "--device",
        nargs="+",
        choices=("cpu", "cuda"),
        default=None,
        help="default: cpu, plus cuda if present",
    )
    parser.add_argument("--warmup", type=int, default=2, help="updates before measuring (default 2)")
    parser.add_argument("--updates", type=int, default=5, help="measured updates (default 5)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1+2 updates: a smoke run")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), help="presets section: which presets")
    parser.add_argument("--envs", type=int, default=None, help="environments per worker (SE-ResNet9, blind)")
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="extra training overrides for every run"
    )
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2], help="workers section: counts")
    parser.add_argument("--workers-preset", default="pointnav-depth-se-resnet9")
    parser.add_argument("--hetero-preset", default="pointnav-depth-se-resnet9")
    parser.add_argument("--hetero-workers", type=int, default=2)
    parser.add_argument(
        "--sync-fracs",
        nargs="+",
        type=float,
        default=[1.0, 0.6],
        help="hetero section (values that cannot preempt with this many workers are lowered, see output)",
    )
    parser.add_argument(
        "--hetero-rank-sim",
        default="{scene_families: [office-l]}",
        help="YAML SimConfig fields of the last worker in the heterogeneous workload",
    )
    parser.add_argument("--probe-seconds", type=float, default=4.0, help="hetero: simulator-only timing")
    parser.add_argument("--sb3-preset", default="pointnav-depth-se-resnet9")
    parser.add_argument(
        "--sb3-env",
        choices=("vector", "dummy"),
        default="vector",
        help="RecurrentPPO's env: NavVectorEnv behind a VecEnv bridge, or a DummyVecEnv of NavEnv",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per training process")
    parser.add_argument("--keep-runs", default=None, help="copy every run folder (logs) here")
    parser.add_argument("--out", default=None, help="JSON path (one device only)")
    parser.add_argument("--child-sb3", help=argparse.SUPPRESS)
    parser.add_argument("--child-probe", help=argparse.SUPPRESS)
    return parser


def main() -> None:
    parser = command_line()
    args = parser.parse_args()
    if args.hetero_workers < 2:
        parser.error("--hetero-workers: at least 2 (preemption needs a worker to wait for)")
    if args.child_sb3:
        from train_bench import sb3_child  # imports sb3-contrib, which only this child needs

        print(json.dumps(sb3_child.measure(json.loads(args.child_sb3))))
        return
    if args.child_probe:
        print(json.dumps(probe_child.measure(json.loads(args.child_probe))))
        return

    sections = list(SECTIONS) if "all" in args.section else list(dict.fromkeys(args.section))
    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    if "cuda" in devices and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device on this machine")
    if args.out and len(devices) > 1:
        parser.error("--out takes one --device")
    for device in devices:
        machine = {**machine_info(device), "device": device, "load_average_start": list(os.getloadavg())}
        print(
            f"# train throughput on {device}: {machine.get('gpu') or machine['cpu']}, {CORES} cores, "
            f"torch {machine['torch']}" + (" (quick smoke run)" if args.quick else ""),
            flush=True,
        )
        if machine["load_average_start"][0] > 0.5:
            print(f"note: load average {machine['load_average_start'][0]:.1f}: timings will be noisy")
        runner = Runner(args, device)
        results = {}
        for name in sections:
            started = time.perf_counter()
            results[name] = SECTIONS[name](runner, args)
            results[name]["seconds"] = time.perf_counter() - started
            results[name]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
            results[name]["quick"] = args.quick
        machine["load_average_end"] = list(os.getloadavg())
        write_results(args, device, machine, results)


if __name__ == "__main__":
    main()
