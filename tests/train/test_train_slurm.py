"""Workers started the way `srun` starts them (SLURM_* variables, no torchrun), and SIGUSR1's
save-and-requeue. SLURM itself cannot run here: the processes are launched with the variables srun would
set, and `scontrol` is a stand-in script on PATH that records its arguments (the only mocked part)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from navzoo.train import checkpoint as ckpt
from tests.support import free_port

TINY = [
    "pointnav-blind",
    "policy.hidden_size=32",
    "policy.num_recurrent_layers=1",
    "sim.num_envs=4",
    "ppo.num_steps=16",
    "sim.scene_families=[apartment-s]",
    "torch_threads=1",
    "checkpoint_every=2",
]


def _slurm_env(tmp_path: Path, rank: int, tasks: int, port: int) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "LOCAL_"))
    }
    env.update(
        SLURM_JOB_ID="4242",
        SLURM_PROCID=str(rank),
        SLURM_NTASKS=str(tasks),
        SLURM_LOCALID=str(rank),
        SLURM_NTASKS_PER_NODE=str(tasks),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        PATH=f"{tmp_path / 'bin'}:{env['PATH']}",
    )
    return env


def _fake_scontrol(tmp_path: Path) -> Path:
    record = tmp_path / "scontrol.calls"
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "scontrol"
    script.write_text(f'#!/bin/sh\necho "$@" >> {record}\n')
    script.chmod(0o755)
    return record


def _launch(tmp_path: Path, run_dir: Path, frames: int, tasks: int) -> list[subprocess.Popen]:
    port = free_port()
    command = [sys.executable, "-m", "navzoo.cli.main", "train", *TINY, f"total_frames={frames}"]
    return [
        subprocess.Popen(
            [*command, "--run-dir", str(run_dir), "--resume"],
            env=_slurm_env(tmp_path, rank, tasks, port),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(tasks)
    ]


def _wait(procs: list[subprocess.Popen], timeout: float) -> list[tuple[str, str]]:
    outputs = []
    for proc in procs:
        try:
            outputs.append(proc.communicate(timeout=timeout))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise
        assert proc.returncode == 0, outputs[-1][1][-3000:]
    return outputs


@pytest.mark.slow
def test_srun_style_workers_form_one_run_and_sigusr1_saves_and_requeues(tmp_path):
    record = _fake_scontrol(tmp_path)
    run_dir = tmp_path / "run"
    # 2 SLURM tasks, 2 x 4 envs x 16 steps = 128 frames per update.
    procs = _launch(tmp_path, run_dir, frames=128 * 400, tasks=2)
    deadline = time.time() + 120
    while ckpt.latest_checkpoint(run_dir) is None:
        assert time.time() < deadline and all(p.poll() is None for p in procs), "no checkpoint appeared"
        time.sleep(0.2)
    for proc in procs:  # SLURM's --signal=USR1@90 reaches every task
        proc.send_signal(signal.SIGUSR1)
    outputs = _wait(procs, timeout=120)
    assert "stopped by SIGUSR1" in outputs[0][0]
    assert record.read_text().split() == ["requeue", "4242"], "rank 0 requeues the job exactly once"
    state = torch.load(ckpt.latest_checkpoint(run_dir), weights_only=True)
    assert state["world_size"] == 2
    assert state["counters"]["frames"] < 128 * 400, "stopped early, at the signal"
    # The requeued job starts the same command again and continues from the checkpoint.
    resumed_from = state["counters"]["update"]
    procs = _launch(tmp_path, run_dir, frames=(resumed_from + 2) * 128, tasks=2)
    _wait(procs, timeout=120)
    final = torch.load(ckpt.latest_checkpoint(run_dir), weights_only=True)
    assert final["counters"]["update"] == resumed_from + 2
