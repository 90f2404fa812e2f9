"""Imitation teachers' throughput: labels per second of each teacher (navzoo.train.teacher) on one thread.

    python benchmarks/teacher_throughput.py                  # both teachers, 64 environments, 300 steps
    python benchmarks/teacher_throughput.py --teachers map-planner --envs 64 256 --steps 1000

The simulator is the depth presets' (64x64 depth, the training split, every scene family), and the
environments are driven the way a learner drives them in DAgger: by the teacher's own action, replaced by
a random movement at a share of the steps (`--noise`, default 0.15), so that episodes leave the teacher's
path and the map-planner replans as it does in training. The drive is seeded, so runs with the same
arguments label the same steps: the `labels sha256` column is a digest of every label and bearing, equal
between two commits whose teachers label alike (an optimisation must leave it unchanged). The first 20
steps, which compile the numba kernels or load them from the cache, are not timed; neither is the
simulator's step.

Each configuration runs in its own process, on one torch and numba thread (as each training worker runs).
JSON goes to benchmarks/results/teacher_throughput-cpu.json. Timings are only meaningful on an otherwise
idle machine; to compare two commits, run the script on each in the same session.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import torch
from report import machine_info, markdown_table, run_in_child, write_json

TEACHERS = ("shortest-path", "map-planner")
WARMUP_STEPS = 20  # compile or load the kernels, and let the first episodes' maps grow


def measure(spec: dict) -> dict:
    """One teacher at one size (runs in a child process)."""
    import numba

    from navzoo.sim import BatchSim, SimConfig
    from navzoo.train.teacher import TEACHERS as TEACHER_CLASSES

    torch.set_num_threads(1)
    numba.set_num_threads(1)
    n = spec["envs"]
    sim = BatchSim(SimConfig(num_envs=n, sensors=("depth",), resolution=(64, 64), split="train", seed=0))
    teacher = TEACHER_CLASSES[spec["teacher"]](sim)
    generator = torch.Generator().manual_seed(0)
    observations, first = sim.reset(), torch.ones(n, dtype=torch.bool)
    digest = hashlib.sha256()
    elapsed = 0.0
    for step in range(WARMUP_STEPS + spec["steps"]):
        started = time.perf_counter()
        actions, bearings = teacher.labels(observations, first)
        if step >= WARMUP_STEPS:
            elapsed += time.perf_counter() - started
        digest.update(actions.numpy().tobytes() + bearings.numpy().tobytes())
        off_path = torch.rand(n, generator=generator) < spec["noise"]
        actions = torch.where(off_path, torch.randint(1, 4, (n,), generator=generator), actions)
        teacher.taken(actions)
        observations, _, first, _ = sim.step(actions)
    labelled = n * spec["steps"]
    return {
        **spec,
        "labels_per_s": labelled / elapsed,
        "ms_per_label": elapsed / labelled * 1e3,
        "labels_sha256": digest.hexdigest()[:16],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--teachers", nargs="*", default=list(TEACHERS), choices=TEACHERS)
    parser.add_argument("--envs", type=int, nargs="*", default=[64], help="environments per teacher")
    parser.add_argument("--steps", type=int, default=300, help="timed steps per configuration")
    parser.add_argument("--noise", type=float, default=0.15, help="share of steps driven at random")
    parser.add_argument("--out", default=None, help="JSON output path")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(json.loads(args.one))))
        return
    machine = machine_info()
    rows = []
    for teacher in args.teachers:
        for envs in args.envs:
            spec = {"teacher": teacher, "envs": envs, "steps": args.steps, "noise": args.noise}
            row = run_in_child(__file__, spec)
            if row is not None:
                rows.append(row)
                print(f"  {teacher} x{envs}: {row['labels_per_s']:,.0f} labels/s", flush=True)
    columns = [
        ("teacher", "teacher"),
        ("envs", "envs"),
        ("labels/s", "labels_per_s"),
        ("ms per label", lambda row: f"{row['ms_per_label']:.3f}"),
        ("labels sha256 (first 16)", "labels_sha256"),
    ]
    print(markdown_table(columns, rows))
    path = write_json("teacher_throughput-cpu", machine, rows, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
