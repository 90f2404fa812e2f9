"""`navzoo finetune`: transfer a PointGoal model to Flee or Explore under one of DD-PPO's five settings,
or under all of them (`--setting all`, the sweep behind DD-PPO Fig. 5)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from navzoo.errors import ConfigError
from navzoo.train.options_cli import HABITAT_KEYS_HELP, add_config_options, config_overrides, print_config

DEFAULT_FRAMES = 1_000_000


def register(subparsers) -> None:
    from navzoo.transfer.setting_names import SETTINGS

    settings = "; ".join(f"{s.id}: {s.description}" for s in SETTINGS.values())
    parser = subparsers.add_parser(
        "finetune",
        help="transfer a PointGoal model to Flee or Explore (DD-PPO's five settings)",
        description="Train a Flee or Explore agent from a PointGoal model with DD-PPO on the embedded "
        "simulator. The GPS+Compass is removed; the setting decides what is reused and what is frozen. "
        "Runs as one process or as many under torchrun (`torchrun --nproc-per-node 2 -m navzoo "
        "finetune ...`). The run folder is a `navzoo train` run folder plus transfer.yaml: resume it with "
        "--resume, evaluate it with `navzoo eval RUN_DIR --task TASK`, publish it with `navzoo push`.",
        epilog=f"settings: {settings}. Example: navzoo finetune --task flee --setting pointgoal-finetune "
        f"--from navzoo-pointnav-rgb --frames 2e5. {HABITAT_KEYS_HELP}.",
    )
    parser.add_argument("--task", choices=("flee", "explore"), help="the new task")
    parser.add_argument(
        "--setting", help=f"one of {', '.join(SETTINGS)} (or DD-PPO's name), or 'all' for the sweep"
    )
    parser.add_argument(
        "--from",
        dest="base",
        help="the PointGoal model: a zoo name, a model or `navzoo train` run folder, or hf-hub:org/name",
    )
    parser.add_argument(
        "--run-dir",
        help="run folder (default runs/finetune/TASK-SETTING); with --setting all, the sweep's folder",
    )
    parser.add_argument("--resume", action="store_true", help="continue the run saved in --run-dir")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start in a --run-dir that already holds files (ones of the same names are replaced)",
    )
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="training config, e.g. ppo.lr=1e-4")
    group = parser.add_argument_group("settings' options")
    group.add_argument(
        "--dummy-goal",
        type=float,
        nargs=2,
        metavar=("RHO", "PHI"),
        help="fixed goal fed to a fine-tuned policy in place of GPS+Compass (default 5 0)",
    )
    group.add_argument("--imagenet-model", help="timm model of imagenet-encoder (default resnet18)")
    group.add_argument(
        "--imagenet-weights", help="local file with its ImageNet weights (default: from the Hub through timm)"
    )
    group.add_argument(
        "--planner-hidden-size", type=int, help="neural-controller planner width (default 512)"
    )
    group.add_argument("--planner-layers", type=int, help="neural-controller planner LSTM layers (default 2)")
    add_config_options(parser, frames_default=DEFAULT_FRAMES)
    sweep = parser.add_argument_group("sweep (--setting all)")
    sweep.add_argument("--eval-episodes", type=int, default=32, help="val episodes per point (default 32)")
    sweep.add_argument("--points", type=int, default=5, help="checkpoints evaluated per run (default 5)")
    parser.set_defaults(run=_run)


# The training stack is imported when a command runs, not when `navzoo` builds its parser.
def _run(args) -> int:
    from navzoo.transfer.config import TransferConfig, transfer_train_config
    from navzoo.transfer.finetune import load_base
    from navzoo.transfer.setting_names import setting_id

    if args.resume and args.setting != "all":
        return _resume(args)
    for flag, value in (("--task", args.task), ("--setting", args.setting), ("--from", args.base)):
        if value is None:
            raise ConfigError(flag, None, "a value (or --resume --run-dir RUN to continue a run)")
    overrides = config_overrides(args)
    frames = _total_frames(overrides)
    if args.setting == "all" and not args.print_config:
        return _sweep(args, frames, overrides, _options(args))
    setting = setting_id("scratch" if args.setting == "all" else args.setting)
    transfer = TransferConfig(task=args.task, setting=setting, base=args.base, **_options(args))
    run_dir = Path(args.run_dir or f"runs/finetune/{transfer.task}-{transfer.setting}")
    base = load_base(transfer.base, transfer.setting)
    config = transfer_train_config(base, transfer.task, frames, overrides)
    if args.print_config:
        print_config({"transfer": transfer.to_dict(), "train": config.to_dict()})
        return 0
    return _train(transfer, config, run_dir, resume=False, overwrite=args.overwrite, base=base)


def _total_frames(overrides: list[str]) -> int:
    """total_frames as the overrides leave it (the last wins, and --frames comes last, as on `navzoo
    train`), else DEFAULT_FRAMES. The sweep needs it before any training config is built."""
    from navzoo.train.config import TrainConfig
    from navzoo.train.overrides import apply_override

    data = {"total_frames": DEFAULT_FRAMES}
    for item in overrides:
        if item.partition("=")[0] == "total_frames":
            apply_override(data, item)
    return TrainConfig(total_frames=data["total_frames"]).total_frames  # checked and made an int


def _options(args) -> dict:
    """The settings' options given on the command line (TransferConfig fields)."""
    given = {
        "dummy_goal": args.dummy_goal,
        "imagenet_model": args.imagenet_model,
        "imagenet_weights": args.imagenet_weights,
        "planner_hidden_size": args.planner_hidden_size,
        "planner_layers": args.planner_layers,
    }
    return {k: v for k, v in given.items() if v is not None}


def _resume(args) -> int:
    """Continue a run with its saved configs; --frames and overrides may extend or change the training."""
    from navzoo.train.run_lock import refuse_if_in_use
    from navzoo.transfer.finetune import load_run
    from navzoo.transfer.setting_names import setting_id

    if args.run_dir is None:
        raise ConfigError("--run-dir", None, "the run folder to resume")
    refuse_if_in_use(Path(args.run_dir))  # a run that has just started there has no transfer.yaml yet
    transfer, config = load_run(args.run_dir, config_overrides(args))  # --frames included
    given = {"task": args.task, "setting": args.setting and setting_id(args.setting), **_options(args)}
    if args.base is not None:
        given["base"] = dataclasses.replace(transfer, base=args.base).base  # folders made absolute alike
    saved = transfer.to_dict()
    for name, value in given.items():
        value = list(value) if isinstance(value, tuple | list) else value
        if value is not None and value != saved[name]:
            raise ConfigError(
                name, value, f"{saved[name]!r} as saved in the run, or leave it out with --resume"
            )
    if args.print_config:
        print_config({"transfer": transfer.to_dict(), "train": config.to_dict()})
        return 0
    return _train(transfer, config, Path(args.run_dir), resume=True)


def _train(transfer, config, run_dir: Path, resume: bool, overwrite: bool = False, base=None) -> int:
    from navzoo.transfer.finetune import finetune

    main_worker = os.environ.get("RANK", "0") == "0"
    if main_worker:
        print(
            f"navzoo finetune: {transfer.setting} on {transfer.task} from {transfer.base}, "
            f"{config.sim.num_envs} envs x {config.ppo.num_steps} steps per worker, "
            f"{config.total_frames:,} frames -> {run_dir}"
        )
    result = finetune(transfer, config, run_dir, resume=resume, overwrite=overwrite, base=base)
    if main_worker:
        if result.stopped_by:
            print(f"stopped by {result.stopped_by} at {result.frames:,} frames; continue with --resume")
        else:
            print(f"done: {result.updates} updates, {result.frames:,} frames; model in {run_dir}")
    return 0


def _sweep(args, frames: int, overrides: list[str], options: dict) -> int:
    from navzoo.transfer.sweep import EvalPlan, run_sweep

    out = Path(args.run_dir or f"runs/finetune/{args.task}-sweep")
    plan = EvalPlan(episodes=args.eval_episodes, points=args.points)
    results = run_sweep(
        args.task, args.base, frames, out, plan=plan, overrides=overrides, transfer_options=options
    )
    print(f"{'setting':<36} {'frames':>10} {results['metric']:>14}")
    for entry in results["settings"].values():
        if entry["status"] == "done":
            last = entry["curve"][-1]
            print(f"{entry['label']:<36} {last['frames']:>10,} {last['metric']:>14.3f}")
        else:
            print(f"{entry['label']:<36} not run: {entry['reason'][:80]}")
    print(f"results: {out / 'sweep.json'}, plot: {out / ('sweep-' + args.task + '.png')}")
    return 0
