"""Run the real navzoo trainer in this process (under torchrun: in every worker), with test hooks.

    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/scripts/train_worker.py \
        pointnav-blind key=value ... --run-dir DIR [--dump-params] [--slow-rank R --slow-step-s S]

It does what `navzoo.train.trainer.train()` does (init_workers, Trainer(...).run(...), close_workers), and
additionally:

--dump-params   writes DIR/rank{R}.pt with this worker's policy parameters before and after training
                ({"initial": state_dict, "final": state_dict, "updates": int, "frames": int}).
--slow-rank R   on worker R only, every BatchSim.step first sleeps --slow-step-s seconds: scaffolding that
                makes one worker a straggler; the simulator and the trainer run unchanged.
--restart-delay-rank R
                after a torchrun restart, worker R waits --restart-delay-s seconds before joining the process
                group, as a worker that is slow to start up would (import, disk, a busy node).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from navzoo.sim.batch_sim import BatchSim
from navzoo.train.config import load_config
from navzoo.train.distributed import close_workers, init_workers, restart_count
from navzoo.train.trainer import Trainer


def _slow_down_sim(seconds: float) -> None:
    original = BatchSim.step

    def slow_step(self, actions):
        time.sleep(seconds)
        return original(self, actions)

    BatchSim.step = slow_step


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--dump-params", action="store_true")
    parser.add_argument("--slow-rank", type=int, default=None)
    parser.add_argument("--slow-step-s", type=float, default=0.05)
    parser.add_argument("--restart-delay-rank", type=int, default=None)
    parser.add_argument("--restart-delay-s", type=float, default=3.0)
    args = parser.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    if args.slow_rank == rank:
        _slow_down_sim(args.slow_step_s)
    config = load_config(args.config, args.overrides)
    run_dir = Path(args.run_dir)
    if args.restart_delay_rank == rank and restart_count() > 0:
        time.sleep(args.restart_delay_s)
    workers = init_workers(config.distributed, config.device)
    try:
        trainer = Trainer(config, run_dir, workers)
        initial = {k: v.detach().clone() for k, v in trainer.policy.state_dict().items()}
        result = trainer.run(args.resume or restart_count() > 0)
        if args.dump_params:
            final = {k: v.detach().cpu().clone() for k, v in trainer.policy.state_dict().items()}
            dump = {"initial": initial, "final": final, "updates": result.updates, "frames": result.frames}
            torch.save(dump, run_dir / f"rank{rank}.pt")
    finally:
        close_workers()
    if rank == 0:
        print(f"done: {result.updates} updates, {result.frames} frames, stopped_by={result.stopped_by}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
