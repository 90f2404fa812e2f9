"""Command-line options that stand for training config keys, shared by `navzoo train` and `navzoo finetune`.

One vocabulary across navzoo's commands: `--frames`, `--threads`, `--num-envs`, `--resolution`,
`--scene-families` and `--device` mean the same on every command that has them, and on the training commands
each is a shortcut for a KEY=VALUE override (`--frames 2e6` is `total_frames=2e6`). Options are applied
after the overrides given as KEY=VALUE, so an option wins over an override of the same key.
"""

from __future__ import annotations

import argparse
from importlib import resources

import yaml

from navzoo.sim_cli import add_families_option, add_resolution_option, resolution


def add_config_options(parser: argparse.ArgumentParser, frames: bool = True) -> None:
    group = parser.add_argument_group("shortcuts for config keys")
    if frames:
        group.add_argument("--frames", type=float, help="total_frames: frames summed over all workers")
    group.add_argument("--threads", type=int, help="torch_threads: threads per worker (0: automatic)")
    group.add_argument("--num-envs", type=int, help="sim.num_envs: environments per worker")
    add_resolution_option(group, "sim.resolution: camera size in pixels")
    add_families_option(group, default=None, what="sim.scene_families: the scene families to train in")
    group.add_argument(
        "--device", help="device: cpu, cuda or cuda:N; the simulator runs on the device that trains"
    )
    group.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved training config as YAML and exit without training",
    )


def presets_folder():
    return resources.files("navzoo.train") / "presets"


def preset_names() -> list[str]:
    files = presets_folder().iterdir()
    return sorted(f.name.removesuffix(".yaml") for f in files if f.name.endswith(".yaml"))


def option_overrides(args: argparse.Namespace) -> list[str]:
    """The KEY=VALUE overrides the shortcut options given stand for."""
    keys = {
        "total_frames": _frames(getattr(args, "frames", None)),
        "torch_threads": args.threads,
        "sim.num_envs": args.num_envs,
        "sim.resolution": _listed(resolution(args.resolution)),
        "sim.scene_families": args.scene_families,
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
