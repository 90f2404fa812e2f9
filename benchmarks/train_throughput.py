"""End-to-end training throughput: frames/s of `navzoo train` and how each update's time splits.

Every navzoo measurement runs the real trainer in its own process (`python -m navzoo.cli train`, or
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
import contextlib
import importlib.util
import json
import math
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

REPO = Path(__file__).resolve().parent.parent
PRESETS = (
    "pointnav-depth-se-resnet9",
    "pointnav-rgb-se-resnet9",
    "pointnav-blind",
    "pointnav-depth-resnet50",
    "pointnav-rgb-resnet50",
)
SIM_TARGET_PRESET = "pointnav-depth-se-resnet9"  # the "64x64 depth with SE-ResNet9"
TARGETS = {"sb3_ratio": 3.0, "sim_fraction": 0.15, "hetero_ratio": 0.9}
NO_CHECKPOINTS = 10**9  # checkpoint_every: only the final checkpoint, written after the last timed update
CORES = os.cpu_count() or 1
STOP_GRACE_S = 120.0  # after a timeout: time for a run to stop cleanly before it is killed


# --- sizes --------------------------------------------------------------------------------------------
def is_heavy(preset: str) -> bool:
    """The ResNet50 presets (256x256): an order of magnitude slower per frame than SE-ResNet9 at 64x64."""
    from navzoo.train.config import load_config

    sim = load_config(preset).sim
    return bool(sim.sensors) and max(sim.resolution) >= 128


def sizing(preset: str, device: str, args) -> tuple[list[str], int, int, str]:
    """Overrides, warm-up updates, measured updates and a note for one preset on one device."""
    heavy = is_heavy(preset)
    if args.quick:
        envs = 2 if heavy else args.envs or 8
        return [f"sim.num_envs={envs}", "ppo.num_steps=8"], 1, 2, "quick: tiny rollouts, not representative"
    if device == "cuda":
        envs = 16 if heavy else args.envs or 128
        overrides = [f"sim.num_envs={envs}", "sim.compile=true", "ppo.amp=true"]
        # torch.compile of the renderer happens during the first updates
        return overrides, max(args.warmup, 3), args.updates, "CUDA: compiled renderer, mixed precision"
    if heavy:
        # 256x256 ResNet50 trains at ~20 frames/s on a few cores (~30 s per 512-frame update): fewer updates
        return [], min(args.warmup, 1), min(args.updates, 3), "CPU: at most 1+3 updates"
    overrides = [f"sim.num_envs={args.envs}"] if args.envs else []
    return overrides, args.warmup, args.updates, ""


def threads_per_worker(workers: int) -> int:
    """Intra-op threads per worker: the machine's cores split between the workers (at least 1)."""
    return max(1, CORES // workers)


# --- running the trainer ------------------------------------------------------------------------------
class Runner:
    """Runs navzoo training processes and summarises their logs; identical runs are measured once."""

    def __init__(self, args, device: str):
        self.args, self.device = args, device
        self.cache: dict[tuple, dict] = {}
        self.keep = Path(args.keep_runs) if args.keep_runs else None

    def train(self, preset: str, overrides: list[str], workers: int, warmup: int, updates: int) -> dict:
        from navzoo.train.config import load_config
        from navzoo.train.logger import read_log

        threads = threads_per_worker(workers)
        overrides = [*overrides, *self.args.set]
        shared_gpu = self.device == "cuda" and workers > torch.cuda.device_count()
        if shared_gpu and not any(o.startswith("distributed.backend=") for o in overrides):
            overrides.append("distributed.backend=gloo")  # NCCL refuses two ranks on one GPU
        key = (preset, tuple(overrides), workers, threads, warmup, updates)
        if key in self.cache:
            return dict(self.cache[key])
        config = load_config(preset, [*overrides, f"device={self.device}"])  # fails early on a bad override
        per_update = config.frames_per_update(workers)
        total = (warmup + updates) * per_update
        cli = [
            "-m",
            "navzoo.cli",
            "train",
            preset,
            *overrides,
            f"device={self.device}",
            f"torch_threads={threads}",
            f"total_frames={total}",
            f"checkpoint_every={NO_CHECKPOINTS}",
            "log_every=1",
        ]
        if workers > 1:
            launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={workers}"]
            cli = [*launcher, *cli]
        result = {
            "preset": preset,
            "overrides": overrides,
            "workers": workers,
            "threads_per_worker": threads,
            "num_envs": config.sim.num_envs,
            "num_steps": config.ppo.num_steps,
            "resolution": list(config.sim.resolution),
            "sensors": list(config.sim.sensors),
            "model": config.model,
            "frames_per_update": per_update,
            "warmup_updates": warmup,
        }
        scratch = Path(tempfile.mkdtemp(prefix="navzoo-train-bench-"))
        run_dir = scratch / "run"
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TQDM_DISABLE": "1"}
        started = time.perf_counter()
        try:
            with open(scratch / "output.log", "w") as output:
                returncode, _, _ = run_process(
                    [sys.executable, *cli, "--run-dir", str(run_dir)],
                    self.args.timeout,
                    cwd=scratch,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            result["wall_s"] = time.perf_counter() - started
            rows = read_log(run_dir)
            if returncode != 0 or len(rows) <= warmup:
                tail = (scratch / "output.log").read_text()[-3000:]
                result["error"] = f"exit status {returncode}, {len(rows)} updates logged:\n{tail}"
            else:
                result.update(summarise(rows, warmup))
        except subprocess.TimeoutExpired:
            result["error"] = f"timed out after {self.args.timeout} s"
        finally:
            if self.keep is not None:
                self.keep.mkdir(parents=True, exist_ok=True)
                shutil.copytree(scratch, self.keep / f"{preset}-{len(self.cache)}", dirs_exist_ok=True)
            shutil.rmtree(scratch, ignore_errors=True)
        if "error" in result:
            print(f"  ! {preset} ({workers} workers) failed: {result['error']}", flush=True)
        self.cache[key] = result
        return dict(result)


def summarise(rows: list[dict], warmup: int) -> dict:
    measured = rows[warmup:]
    previous = [{"train/episodes": 0}, *rows][warmup:-1]  # the row before each measured one
    before = rows[warmup - 1]["frames"] if warmup else 0
    seconds = sum(r["perf/update_s"] for r in measured)

    def median(key: str) -> float:
        return statistics.median(r[key] for r in measured)

    return {
        "updates": len(measured),
        "fps": median("perf/fps"),
        "fps_total": (measured[-1]["frames"] - before) / seconds,
        "fps_per_update": [r["perf/fps"] for r in measured],
        "sim_fraction": median("perf/sim_fraction"),
        "inference_fraction": median("perf/inference_fraction"),
        "learning_fraction": median("perf/learning_fraction"),
        "update_s": median("perf/update_s"),
        "steps_mean": median("rollout/steps_mean"),
        "steps_min": median("rollout/steps_min"),
        "preempted_workers": statistics.mean(r["rollout/preempted_workers"] for r in measured),
        "episodes_per_update": statistics.median(
            b["train/episodes"] - a["train/episodes"] for a, b in zip(previous, measured, strict=True)
        ),
    }


# --- tables -------------------------------------------------------------------------------------------
def print_table(title: str, columns: list[tuple[str, object]], rows: list[dict]) -> None:
    """A markdown table; each column is (header, function of a row that returns the cell text)."""
    print(f"\n### {title}\n")
    table = [[header for header, _ in columns]]
    table += [[_cell(row, get) for _, get in columns] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    for i, line in enumerate(table):
        print("| " + " | ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    sys.stdout.flush()


def _cell(row: dict, get) -> str:
    try:
        value = get(row)
    except (KeyError, TypeError, ZeroDivisionError):
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 10 else f"{value:,.0f}"
    return str(value)


def pct(key: str):
    return lambda row: f"{100 * row[key]:.1f}%"


def fps(key: str = "fps"):
    return lambda row: f"{row[key]:,.1f}" if row[key] < 100 else f"{row[key]:,.0f}"


def size(row: dict) -> str:
    res = " " + "x".join(map(str, row["resolution"])) if row["sensors"] else ""
    return f"{row['num_envs']}x{row['num_steps']} {'+'.join(row['sensors']) or 'blind'}{res}"


def verdict(value: float | None, target: float, higher_is_better: bool, quick: bool) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    ok = value >= target if higher_is_better else value <= target
    return ("PASS" if ok else "FAIL") + (" (quick run: not representative)" if quick else "")


TIME_SPLIT = [
    ("sim", pct("sim_fraction")),
    ("inference", pct("inference_fraction")),
    ("learning", pct("learning_fraction")),
]


# --- sections -----------------------------------------------------------------------------------------
def section_presets(runner: Runner, args) -> dict:
    rows, notes = [], {}
    for preset in args.presets:
        overrides, warmup, updates, note = sizing(preset, runner.device, args)
        print(f"[{runner.device}] presets: {preset} ...", flush=True)
        row = runner.train(preset, overrides, 1, warmup, updates)
        row["note"] = note
        rows.append(row)
        if note:
            notes[preset] = note
    ok = [r for r in rows if "error" not in r]
    print_table(
        f"presets ({runner.device}, 1 worker, {threads_per_worker(1)} threads)",
        [
            ("preset", lambda r: r["preset"]),
            ("model", lambda r: r["model"]),
            ("size (envs x steps, sensors)", size),
            ("updates", lambda r: f"{r['warmup_updates']}+{r['updates']}"),
            ("frames/s", fps()),
            ("frames/s (total)", fps("fps_total")),
            *TIME_SPLIT,
            ("update s", lambda r: r["update_s"]),
            ("note", lambda r: ("FAILED (error in the JSON) " if "error" in r else "") + r["note"]),
        ],
        rows,
    )
    target = next((r for r in ok if r["preset"] == SIM_TARGET_PRESET and r["resolution"] == [64, 64]), None)
    sim_fraction = target["sim_fraction"] if target else None
    result = {"rows": rows, "notes": notes}
    if target is not None:
        check = verdict(sim_fraction, TARGETS["sim_fraction"], False, args.quick)
        print(
            f"\ntarget: simulation <= {TARGETS['sim_fraction']:.0%} of the frame time at 64x64 depth with "
            f"SE-ResNet9: {100 * sim_fraction:.1f}% -> {check}"
        )
        result["target_sim_fraction"] = {
            "value": sim_fraction,
            "max": TARGETS["sim_fraction"],
            "verdict": check,
        }
    return result


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


def section_sb3(runner: Runner, args) -> dict:
    from navzoo.models import PointNavPolicy
    from navzoo.train.config import load_config

    if importlib.util.find_spec("sb3_contrib") is None:
        hint = "sb3-contrib is not installed: pip install -e '.[bench]' (or pip install sb3-contrib)"
        print(f"\n### sb3 ({runner.device})\n\nskipped: {hint}")
        return {"skipped": hint}
    preset = args.sb3_preset
    overrides, warmup, updates, note = sizing(preset, runner.device, args)
    config = load_config(preset, [*overrides, *args.set])
    if "rgb" in config.sim.sensors:
        raise SystemExit("--sb3-preset: a depth or blind preset (sb3 would transpose and rescale RGB images)")
    print(f"[{runner.device}] sb3: navzoo trainer, {preset} ...", flush=True)
    navzoo_row = {**runner.train(preset, overrides, 1, warmup, updates), "trainer": "navzoo"}
    navzoo_row["train_padding"] = 1.0  # navzoo's mini-batches are whole [T, N] rollouts, never padded
    navzoo_row["params"] = sum(p.numel() for p in PointNavPolicy(config.policy_config()).parameters())
    print(f"[{runner.device}] sb3: RecurrentPPO ({args.sb3_env} env), {preset} ...", flush=True)
    spec = {
        "preset": preset,
        "overrides": [*overrides, *args.set],
        "device": runner.device,
        "threads": threads_per_worker(1),
        "warmup": warmup,
        "updates": updates,
        "env": args.sb3_env,
    }
    sb3_row = child(["--child-sb3", json.dumps(spec)], args.timeout)
    sb3_row.update(
        {
            "trainer": f"sb3-contrib RecurrentPPO ({args.sb3_env})",
            "num_envs": config.sim.num_envs,
            "num_steps": config.ppo.num_steps,
            "resolution": list(config.sim.resolution),
            "sensors": list(config.sim.sensors),
            "threads_per_worker": spec["threads"],
            "warmup_updates": warmup,
        }
    )
    rows = [navzoo_row, sb3_row]
    ratio = None
    if "error" not in navzoo_row and "error" not in sb3_row:
        ratio = navzoo_row["fps"] / sb3_row["fps"]
    print_table(
        f"sb3 ({runner.device}, {preset}, 1 process, {spec['threads']} threads)",
        [
            ("trainer", lambda r: r["trainer"]),
            ("size", size),
            ("params (M)", lambda r: f"{r['params'] / 1e6:.2f}"),
            ("updates", lambda r: f"{r['warmup_updates']}+{r['updates']}"),
            ("frames/s", fps()),
            ("frames/s (total)", fps("fps_total")),
            *TIME_SPLIT,
            ("update s", lambda r: r["update_s"]),
            ("episodes/update", lambda r: f"{r['episodes_per_update']:.0f}"),
            ("PPO frames/frame", lambda r: f"{r['train_padding']:.2f}"),
        ],
        rows,
    )
    notes = [
        "same simulator config, environments, rollout length, PPO epochs and mini-batches; RecurrentPPO's "
        "features extractor is navzoo's visual encoder + visual_fc + goal embedding, then a shared LSTM "
        "of the same size and linear heads (navzoo also embeds the previous action: 32 more LSTM inputs)",
        "PPO frames/frame: frames the encoder runs with gradients per collected frame and epoch. "
        "RecurrentPPO splits every rollout at episode starts and pads the fragments to the longest in the "
        "mini-batch; an untrained policy ends episodes every few steps (stop is 1 of 4 actions), so this "
        "measures early training, where padding is largest; with long episodes it approaches 1",
        "RecurrentPPO: Adam, no mixed precision; sim = time inside the vector env's step (the Gymnasium "
        "adapter's numpy conversion and final observations included), inference = rest of the rollout",
        f"sb3 env: {args.sb3_env} ("
        + (
            "NavVectorEnv, one batched simulator, behind a thin sb3 VecEnv bridge"
            if args.sb3_env == "vector"
            else "sb3 DummyVecEnv of single NavEnv environments"
        )
        + ")",
    ]
    if sb3_row.get("sb3_versions"):
        notes.append("versions: " + ", ".join(f"{k} {v}" for k, v in sb3_row["sb3_versions"].items()))
    if note:
        notes.append(note)
    print_notes(notes)
    result = {"rows": rows, "notes": notes, "ratio": ratio}
    if ratio is not None:
        check = verdict(ratio, TARGETS["sb3_ratio"], True, args.quick)
        print(
            f"\ntarget: navzoo >= {TARGETS['sb3_ratio']:g}x RecurrentPPO's frames/s: {ratio:.2f}x -> {check}"
        )
        result["target_sb3_ratio"] = {"value": ratio, "min": TARGETS["sb3_ratio"], "verdict": check}
    return result


def print_notes(notes: list[str]) -> None:
    print()
    for line in notes:
        print(f"- {line}")
    sys.stdout.flush()


# --- child processes ------------------------------------------------------------------------------------
def run_process(cmd: list[str], timeout: float | None, **kwargs) -> tuple[int, str | None, str | None]:
    """Run a command in its own process group. On a timeout (or Ctrl-C) SIGTERM it, which makes torchrun
    stop its workers (they run in sessions of their own) and the trainer stop after its current update;
    whatever is left of the group after STOP_GRACE_S is killed."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        raise
    return proc.returncode, out, err


def child(extra: list[str], timeout: float | None) -> dict:
    """Run this script with a hidden child flag; its last stdout line is a JSON result."""
    try:
        returncode, out, err = run_process(
            [sys.executable, __file__, *extra],
            timeout,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = out.strip().splitlines()
    if returncode != 0 or not lines:
        error = f"exit status {returncode}:\n{(out + err)[-3000:]}"
        print(f"  ! child failed: {error}", flush=True)
        return {"error": error}
    return json.loads(lines[-1])


def sim_probe(base, costly, device: str, args) -> dict:
    """Simulator-only frames/s of rank 0's and the costly rank's SimConfig (in a child process)."""
    spec = {
        "base": _sim_dict(base),
        "costly": _sim_dict(costly),
        "device": device,
        "seconds": 1.0 if args.quick else args.probe_seconds,
    }
    return child(["--child-probe", json.dumps(spec)], args.timeout)


def _sim_dict(config) -> dict:
    import dataclasses

    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}


def probe_child(spec: dict) -> dict:
    from navzoo.sim import BatchSim, SimConfig

    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    device = spec["device"]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    generator = torch.Generator(device=device).manual_seed(0)
    sims = {}
    for name in ("base", "costly"):
        sims[name] = sim = BatchSim(SimConfig.from_dict({**spec[name], "device": device}))
        sim.reset()
        for _ in range(3):  # warm-up (and compilation with sim.compile)
            sim.step(torch.randint(0, 4, (sim.num_envs,), device=device, generator=generator))
    best = dict.fromkeys(sims, 0.0)
    for _ in range(2):  # alternate, and keep each one's best
        for name, sim in sims.items():
            n = sim.num_envs
            steps, started = 0, time.perf_counter()
            while time.perf_counter() - started < spec["seconds"] / 2 or steps < 3:
                # uniform over all four actions, like an untrained policy: stop ends episodes often
                sim.step(torch.randint(0, 4, (n,), device=device, generator=generator))
                steps += 1
            sync()
            best[name] = max(best[name], n * steps / (time.perf_counter() - started))
    return {"base_fps": best["base"], "costly_fps": best["costly"]}


def sb3_child(spec: dict) -> dict:
    """RecurrentPPO on the preset's simulator with navzoo's network; per-iteration timings."""
    import numpy as np
    import sb3_contrib
    import stable_baselines3
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper

    from navzoo.models.configuration import GOAL_SENSOR
    from navzoo.models.policy import PointNavNet
    from navzoo.sim.gym_env import NavEnv, NavVectorEnv
    from navzoo.train.config import load_config

    torch.set_num_threads(spec["threads"])
    device = spec["device"]
    config = load_config(spec["preset"], [*spec["overrides"], f"device={device}"])
    policy_config = config.policy_config()
    ppo = config.ppo
    sim_config = config.sim_for_rank(0).replace(device=device)
    n = sim_config.num_envs

    class NavzooFeatures(BaseFeaturesExtractor):
        """navzoo's visual encoder + visual_fc and goal embedding: the LSTM's inputs, as in PointNavNet."""

        def __init__(self, observation_space, policy_config):
            torch.manual_seed(config.seed)
            net = PointNavNet(policy_config)
            visual = policy_config.hidden_size if net.visual_encoder is not None else 0
            super().__init__(observation_space, features_dim=visual + 32)
            self.visual_encoder, self.visual_fc = net.visual_encoder, net.visual_fc
            self.tgt_embeding = net.tgt_embeding
            self.grad_frames = 0  # frames encoded with gradients: PPO's passes, padding included

        def forward(self, observations):
            if torch.is_grad_enabled():
                self.grad_frames += observations[GOAL_SENSOR].shape[0]
            rho, phi = observations[GOAL_SENSOR][:, 0], observations[GOAL_SENSOR][:, 1]
            goal = self.tgt_embeding(torch.stack([rho, torch.cos(-phi), torch.sin(-phi)], -1))
            if self.visual_encoder is None:
                return goal
            return torch.cat([self.visual_fc(self.visual_encoder(observations)), goal], 1)

    class VectorBridge(VecEnv):
        """sb3's VecEnv interface over navzoo's gymnasium NavVectorEnv (one batched simulator)."""

        def __init__(self, sim_config):
            self.venv = NavVectorEnv(sim_config)
            super().__init__(n, self.venv.single_observation_space, self.venv.single_action_space)
            self.actions = None

        def reset(self):
            obs, _ = self.venv.reset()
            return obs

        def step_async(self, actions):
            self.actions = actions

        def step_wait(self):
            obs, reward, terminated, truncated, info = self.venv.step(self.actions)
            done = terminated | truncated
            infos = [{} for _ in range(n)]
            for i in np.flatnonzero(done):
                infos[i]["terminal_observation"] = info["final_obs"][i]
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            return obs, reward.astype(np.float32), done, infos

        def close(self):
            self.venv.close()

        def get_attr(self, attr_name, indices=None):
            return [getattr(self.venv, attr_name)] * len(self._get_indices(indices))

        def set_attr(self, attr_name, value, indices=None):
            setattr(self.venv, attr_name, value)

        def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
            result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
            return [result] * len(self._get_indices(indices))

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(self._get_indices(indices))

    class TimedEnv(VecEnvWrapper):
        """Accumulates the seconds spent inside the environments' step."""

        def __init__(self, venv):
            super().__init__(venv)
            self.sim_s = 0.0

        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            started = time.perf_counter()
            out = self.venv.step_wait()
            if device == "cuda":
                torch.cuda.synchronize()
            self.sim_s += time.perf_counter() - started
            return out

    class Timer(BaseCallback):
        def __init__(self, env):
            super().__init__()
            self.env, self.marks = env, []
            self.episodes = 0

        def _mark(self, kind: str) -> None:
            if device == "cuda":
                torch.cuda.synchronize()
            encoded = self.model.policy.features_extractor.grad_frames
            self.marks.append((kind, time.perf_counter(), self.env.sim_s, encoded, self.episodes))

        def _on_rollout_start(self) -> None:
            self._mark("start")

        def _on_rollout_end(self) -> None:
            self._mark("end")

        def _on_training_end(self) -> None:
            self._mark("start")  # the end of the last iteration's training

        def _on_step(self) -> bool:
            self.episodes += int(np.sum(self.locals["dones"]))
            return True

    if spec["env"] == "vector":
        base_env = VectorBridge(sim_config)
    else:
        makers = [(lambda i=i: NavEnv(sim_config.replace(seed=sim_config.seed * 1000 + i))) for i in range(n)]
        base_env = DummyVecEnv(makers)
    env = TimedEnv(base_env)
    torch.manual_seed(config.seed)
    model = RecurrentPPO(
        "MultiInputLstmPolicy",
        env,
        n_steps=ppo.num_steps,
        batch_size=ppo.num_steps * n // ppo.num_mini_batch,
        n_epochs=ppo.ppo_epoch,
        learning_rate=ppo.lr,
        gamma=ppo.gamma,
        gae_lambda=ppo.tau,
        clip_range=ppo.clip_param,
        ent_coef=ppo.entropy_coef,
        vf_coef=ppo.value_loss_coef,
        max_grad_norm=ppo.max_grad_norm,
        normalize_advantage=ppo.use_normalized_advantage,
        policy_kwargs={
            "features_extractor_class": NavzooFeatures,
            "features_extractor_kwargs": {"policy_config": policy_config},
            "lstm_hidden_size": policy_config.hidden_size,
            "n_lstm_layers": policy_config.num_recurrent_layers,
            "shared_lstm": True,  # one LSTM for actor and critic, as navzoo's policy
            "enable_critic_lstm": False,
            "net_arch": [],  # linear action and value heads on the LSTM output
            "ortho_init": False,  # keep the encoder's own initialisation (Fixup for SE-ResNet9)
        },
        device=device,
        seed=config.seed,
        verbose=0,
    )
    params = sum(p.numel() for p in model.policy.parameters())
    timer = Timer(env)
    iterations = spec["warmup"] + spec["updates"]
    model.learn(total_timesteps=iterations * ppo.num_steps * n, callback=timer)
    env.close()
    starts = [m for m in timer.marks if m[0] == "start"]
    ends = [m for m in timer.marks if m[0] == "end"]
    per = []
    frames = ppo.num_steps * n
    for i in range(spec["warmup"], len(ends)):
        start, end, nxt = starts[i], ends[i], starts[i + 1]
        wall = nxt[1] - start[1]
        sim = end[2] - start[2]
        rollout = end[1] - start[1]
        per.append({"fps": frames / wall, "wall": wall, "sim": sim, "inference": rollout - sim})
        per[-1]["learning"] = wall - rollout
        per[-1]["padding"] = (nxt[3] - end[3]) / (frames * ppo.ppo_epoch)
        per[-1]["episodes"] = end[4] - start[4]
    return {
        "updates": len(per),
        "fps": statistics.median(p["fps"] for p in per),
        "fps_total": frames * len(per) / sum(p["wall"] for p in per),
        "fps_per_update": [p["fps"] for p in per],
        "sim_fraction": statistics.median(p["sim"] / p["wall"] for p in per),
        "inference_fraction": statistics.median(p["inference"] / p["wall"] for p in per),
        "learning_fraction": statistics.median(p["learning"] / p["wall"] for p in per),
        "update_s": statistics.median(p["wall"] for p in per),
        "frames_per_update": frames,
        "episodes_per_update": statistics.median(p["episodes"] for p in per),
        # frames RecurrentPPO's encoder runs with gradients per rollout frame and epoch (its padding of
        # episode fragments to the longest one in the mini-batch); navzoo's is 1
        "train_padding": statistics.median(p["padding"] for p in per),
        "params": params,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sb3_versions": {
            "stable-baselines3": stable_baselines3.__version__,
            "sb3-contrib": sb3_contrib.__version__,
        },
    }


# --- main -----------------------------------------------------------------------------------------------
def machine_info(device: str) -> dict:
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_name(),
        "cpu_count": CORES,
        "torch": torch.__version__,
        "device": device,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "gpu_count": torch.cuda.device_count() if device == "cuda" else 0,
        "load_average_start": list(os.getloadavg()),
    }
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        info["navzoo_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
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


SECTIONS = {
    "presets": section_presets,
    "workers": section_workers,
    "hetero": section_hetero,
    "sb3": section_sb3,
}


def main() -> None:
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
    args = parser.parse_args()
    if args.hetero_workers < 2:
        parser.error("--hetero-workers: at least 2 (preemption needs a worker to wait for)")
    if args.child_sb3:
        print(json.dumps(sb3_child(json.loads(args.child_sb3))))
        return
    if args.child_probe:
        print(json.dumps(probe_child(json.loads(args.child_probe))))
        return

    sections = list(SECTIONS) if "all" in args.section else list(dict.fromkeys(args.section))
    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    if "cuda" in devices and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device on this machine")
    if args.out and len(devices) > 1:
        parser.error("--out takes one --device")
    for device in devices:
        machine = machine_info(device)
        print(
            f"# train throughput on {device}: {machine['gpu'] or machine['cpu']}, {CORES} cores, "
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
        write_json(args, device, machine, results)


def write_json(args, device: str, machine: dict, results: dict) -> None:
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


if __name__ == "__main__":
    main()
