"""navzoo training runs, each in its own process, summarised from the log.jsonl they write."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from train_bench.processes import run_process
from train_bench.sizes import threads_per_worker

NO_CHECKPOINTS = 10**9  # checkpoint_every: only the final checkpoint, written after the last timed update


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
            "navzoo.cli.main",
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
