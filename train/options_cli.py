"""Command-line options that stand for training config keys, shared by `navzoo train` and `navzoo finetune`.

One vocabulary across navzoo's commands: `--frames`, `--threads`, `--num-envs`, `--resolution`,
`--scene-families`, `--episodes-file`, `--scenes-dir`, `--scene-dataset` and `--device` mean the same on
every command that has them, and on the training commands each is a shortcut for a KEY=VALUE override
(`--frames 2e6` is `total_frames=2e6`). Options are applied after the overrides given as KEY=VALUE, so an
option wins over an override of the same key, on both commands.
Overrides may also use habitat-baselines' names for the settings both have (navzoo.train.overrides).
"""

from __future__ import annotations

import argparse

import yaml

from navzoo.cli.options import (
    add_device_option,
    add_families_option,
    add_resolution_option,
    add_scene_options,
    add_threads_option,
    resolution,
)
from navzoo.train.overrides import habitat_to_navzoo

HABITAT_KEYS_HELP = (
    "habitat-baselines' keys work too: habitat_baselines.num_environments (sim.num_envs), "
    "total_num_steps (total_frames), checkpoint_interval (checkpoint_every), log_interval (log_every), "
    "rl.ddppo.sync_frac (distributed.sync_frac), wb.project_name / entity / run_name / group (wandb.*) "
    "and rl.ppo.<field> (ppo.<field>)"
)


def add_config_options(parser: argparse.ArgumentParser, frames_default: int | None = None) -> None:
    """The shortcuts; `frames_default` is the command's own total_frames, if not the config's."""
    group = parser.add_argument_group("shortcuts for config keys")
    shown = f"{frames_default:,}" if frames_default else "the config's"
    group.add_argument(
        "--frames", type=float, help=f"total_frames: frames summed over all workers (default {shown})"
    )
    add_threads_option(
        group, "torch_threads: threads per worker", "the cores split between the workers", None
    )
    group.add_argument("--num-envs", type=int, help="sim.num_envs: environments per worker")
    add_resolution_option(group, "sim.resolution: camera size in pixels")
    add_families_option(group, default=None, what="sim.scene_families: the scene families to train in")
    group.add_argument(
        "--episodes-file",
        help="sim.episodes_file: habitat PointNav .json(.gz) episodes to train on (default none)",
    )
    add_scene_options(group, prefix="sim.")
    add_device_option(group, "device, where each worker trains and simulates", default=None)
    group.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved training config as YAML and exit without training",
    )


def config_overrides(args: argparse.Namespace) -> list[str]:
    """The KEY=VALUE overrides of a command line in the order they apply: those given, with habitat-baselines'
    keys renamed to navzoo's, then the shortcut options'."""
    return [*map(habitat_to_navzoo, args.overrides), *_option_overrides(args)]


def _option_overrides(args: argparse.Namespace) -> list[str]:
    """The KEY=VALUE overrides the shortcut options given stand for."""
    keys = {
        "total_frames": _frames(args.frames),
        "torch_threads": args.threads,
        "sim.num_envs": args.num_envs,
        "sim.resolution": _listed(resolution(args.resolution)),
        "sim.scene_families": args.scene_families,
        "sim.episodes_file": args.episodes_file,
        "sim.scenes_dir": args.scenes_dir,
        "sim.scene_dataset": args.scene_dataset,
        "device": args.device,
    }
    return [f"{key}={_yaml(value)}" for key, value in keys.items() if value is not None]


def print_config(data: dict) -> None:
    print(yaml.safe_dump(data, sort_keys=False), end="")


def _frames(value: float | None) -> int | None:
    return None if value is None else int(value)


def _listed(pair: tuple[int, int] | None) -> list[int] | None:
    return None if pair is None else list(pair)


def _yaml(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...")
