"""`navzoo train`: DD-PPO PointGoal training from a preset or YAML config with key=value overrides."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from navzoo.errors import ConfigError, closest
from navzoo.train.options_cli import HABITAT_KEYS_HELP, add_config_options, config_overrides, print_config
from navzoo.train.presets import preset_names

if TYPE_CHECKING:  # the training stack is imported when the command runs
    from navzoo.train.config import TrainConfig


def register(subparsers) -> None:
    presets = ", ".join(preset_names())
    parser = subparsers.add_parser(
        "train",
        help="train a PointGoal agent with DD-PPO",
        description="Train a PointGoal agent with DD-PPO on the embedded simulator. Runs as one process, "
        "or as many under torchrun (e.g. `torchrun --nproc-per-node 2 -m navzoo train ...`). The run "
        "folder gets checkpoints/, log.jsonl, tb/ (TensorBoard), learning_curve.png, and config.json + "
        "model.safetensors, so navzoo.load(RUN_DIR) and `navzoo eval RUN_DIR` work.",
        epilog=f"presets: {presets}. Example: navzoo train pointnav-depth-se-resnet9 total_frames=2e6 "
        f"sim.num_envs=32 --run-dir runs/depth. {HABITAT_KEYS_HELP}.",
    )
    parser.add_argument(
        "config", nargs="?", default=None, help="a preset name or a YAML file (optional with --resume)"
    )
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="e.g. ppo.lr=1e-4 sim.num_envs=32")
    parser.add_argument(
        "--run-dir", help="folder for checkpoints, logs and the trained model (needed to train)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in --run-dir (with its saved config unless one is given)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start in a --run-dir that already holds files, e.g. a model folder (ones of the same names are "
        "replaced, nothing else is deleted)",
    )
    add_config_options(parser)
    parser.set_defaults(run=_run)


def _run(args) -> int:
    from navzoo.train.config import load_config
    from navzoo.train.run_folder import CONFIG_FILE
    from navzoo.train.run_lock import refuse_if_in_use
    from navzoo.train.trainer import train

    _check_preset_name(args.config)
    if args.run_dir is None and not (args.print_config and not args.resume):
        raise ConfigError("run_dir", None, "a folder for the run's checkpoints, logs and model")
    run_dir = Path(args.run_dir or ".")
    config_source = args.config
    overrides = config_overrides(args)
    if config_source is not None and "=" in config_source:
        overrides.insert(0, config_source)  # only overrides were given
        config_source = None
    if config_source is None:
        if not args.resume:
            raise ConfigError(
                "config", None, "a preset or YAML file (or --resume with an existing --run-dir)"
            )
        refuse_if_in_use(run_dir)  # a run that has just started there has no config file yet
        config_source = run_dir / CONFIG_FILE
        if not config_source.is_file():
            raise ConfigError("run_dir", str(run_dir), f"a run folder holding {CONFIG_FILE} to resume")
    config = load_config(config_source, overrides)
    if args.print_config:
        print_config(config.to_dict())
        return 0
    if config.model is None:
        raise ConfigError(
            "model",
            None,
            "a zoo architecture; a run without one was started by `navzoo finetune`: continue it with "
            f"`navzoo finetune --resume --run-dir {run_dir}`",
        )
    main_worker = os.environ.get("RANK", "0") == "0"
    if main_worker:
        print(f"navzoo train: {_summary(config)} -> {run_dir}")
    result = train(config, run_dir, resume=args.resume, overwrite=args.overwrite)
    if not main_worker:
        return 0
    if result.stopped_by:
        print(f"stopped by {result.stopped_by} at {result.frames:,} frames; continue with --resume")
    else:
        print(f"done: {result.updates} updates, {result.frames:,} frames; model in {run_dir}")
    return 0


def _check_preset_name(source: str | None) -> None:
    """A mistyped preset name is refused first, leading with the preset meant (load_config lists them all)."""
    if source is None or "=" in source or Path(source).exists() or source in preset_names():
        return
    if close := closest(source, preset_names()):
        raise ConfigError("config", source, "a YAML file or a preset", suggestion=close)


def _summary(config: TrainConfig) -> str:
    """One line of what the run trains: the model, its backbone and cameras, the task and the sizes."""
    policy = config.policy_config()
    return (
        f"{config.model} ({policy.backbone or 'blind'}, {'+'.join(policy.sensors)}), {config.sim.task}, "
        f"{config.sim.num_envs} envs x {config.ppo.num_steps} steps per worker, "
        f"{config.total_frames:,} frames"
    )
