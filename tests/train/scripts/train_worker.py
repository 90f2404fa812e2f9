"""Run the real navzoo trainer in this process (under torchrun: in every worker), with test hooks.

    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/scripts/train_worker.py \
        pointnav-blind key=value ... --run-dir DIR [--dump-params] [--slow-rank R --slow-step-s S]

It calls `navzoo.train.trainer.train()` with trainer callbacks that add:

--dump-params   writes DIR/rank{R}.pt with this worker's policy parameters before and after training
                ({"initial": state_dict, "final": state_dict, "updates": int, "frames": int}).
--slow-rank R   on worker R only, every step of its simulator first sleeps --slow-step-s seconds: scaffolding
                that makes one worker a straggler; the simulator and the trainer run unchanged.
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

from navzoo.train.callbacks import TrainerCallback, TrainingRun, TrainResult
from navzoo.train.config import load_config
from navzoo.train.distributed import restart_count
from navzoo.train.trainer import train


class DumpParams(TrainerCallback):
    def __init__(self, path: Path):
        self.path = path
        self.initial: dict[str, torch.Tensor] = {}

    def on_train_start(self, run: TrainingRun) -> None:
        self.initial = {k: v.detach().cpu().clone() for k, v in run.policy.state_dict().items()}

    def on_train_end(self, run: TrainingRun, result: TrainResult) -> None:
        final = {k: v.detach().cpu().clone() for k, v in run.policy.state_dict().items()}
        dump = {"initial": self.initial, "final": final, "updates": result.updates, "frames": result.frames}
        torch.save(dump, self.path)


class SlowSimulator(TrainerCallback):
    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_train_start(self, run: TrainingRun) -> None:
        step = run.sim.step

        def slow_step(actions):
            time.sleep(self.seconds)
            return step(actions)

        run.sim.step = slow_step


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
    config = load_config(args.config, args.overrides)
    run_dir = Path(args.run_dir)
    callbacks: list[TrainerCallback] = []
    if args.dump_params:
        callbacks.append(DumpParams(run_dir / f"rank{rank}.pt"))
    if args.slow_rank == rank:
        callbacks.append(SlowSimulator(args.slow_step_s))
    if args.restart_delay_rank == rank and restart_count() > 0:
        time.sleep(args.restart_delay_s)
    result = train(config, run_dir, resume=args.resume, callbacks=callbacks)
    if rank == 0:
        print(f"done: {result.updates} updates, {result.frames} frames, stopped_by={result.stopped_by}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
