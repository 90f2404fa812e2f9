"""Simulator options shared by the commands, and `navzoo episodes` (export a split in habitat's format)."""

import argparse

from navzoo.errors import ConfigError
from navzoo.sim.config import SCENE_FAMILIES, SENSORS, SPLITS, TASKS, SimConfig


def add_sim_arguments(parser: argparse.ArgumentParser, split: str = "val") -> None:
    group = parser.add_argument_group("simulator")
    group.add_argument("--task", default="pointnav", choices=TASKS, help="the task (default pointnav)")
    group.add_argument("--split", default=split, choices=SPLITS, help=f"episode split (default {split})")
    group.add_argument("--num-envs", type=int, default=16, help="environments stepped together (default 16)")
    add_resolution_option(group, "camera size in pixels", default=64)
    group.add_argument(
        "--sensors", nargs="*", default=["depth"], choices=SENSORS, help="cameras (default depth)"
    )
    add_families_option(group)
    group.add_argument("--episodes-file", default=None, help="habitat PointNav .json(.gz) episodes to run")
    group.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    group.add_argument("--seed", type=int, default=0, help="seed of the sampled actions (default 0)")


def add_resolution_option(parser, what: str, default: int | None = None) -> None:
    """--resolution N (square) or --resolution H W, on every navzoo command that takes it."""
    suffix = f" (default {default})" if default else ""
    parser.add_argument(
        "--resolution",
        type=int,
        nargs="+",
        metavar="N",
        default=None if default is None else [default],
        help=f"{what}: N for N x N, or H W{suffix}",
    )


def resolution(values: list[int] | None) -> tuple[int, int] | None:
    """(height, width) from --resolution's one or two numbers."""
    if values is None:
        return None
    if len(values) not in (1, 2):
        raise ConfigError("resolution", values, "one number N (N x N) or two, height and width")
    return (values[0], values[-1])


def add_families_option(parser, default: tuple[str, ...] | None = SCENE_FAMILIES, what: str = "") -> None:
    """--scene-families (SimConfig.scene_families; --families for short)."""
    parser.add_argument(
        "--scene-families",
        "--families",
        dest="scene_families",
        nargs="+",
        metavar="FAMILY",
        default=None if default is None else list(default),
        choices=SCENE_FAMILIES,
        help=what or f"scene families to use: {', '.join(SCENE_FAMILIES)} (default: all)",
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "episodes",
        help="write a split's episodes as a habitat PointNav dataset",
        description="Write the fixed episode set of a split in habitat-lab's "
        "PointNav dataset format (.json or .json.gz).",
    )
    parser.add_argument("out", help="output file, e.g. val.json.gz")
    parser.add_argument("--split", default="val", choices=("val", "test"), help="the split (default val)")
    add_families_option(parser)
    parser.set_defaults(run=_run_episodes)


def _run_episodes(args) -> None:
    from navzoo.sim.episodes import episodes_for, save_episodes

    config = SimConfig(split=args.split, scene_families=tuple(args.scene_families))
    episodes = episodes_for(config)
    save_episodes(episodes, args.out)
    print(f"wrote {len(episodes)} {args.split} episodes to {args.out}")
