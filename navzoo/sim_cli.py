"""Simulator options shared by the commands, and `navzoo episodes` (export a split in habitat's format)."""

import argparse

from navzoo.sim.config import SCENE_FAMILIES, SENSORS, SPLITS, TASKS, SimConfig
from navzoo.sim.episodes import episodes_for, save_episodes


def add_sim_arguments(parser: argparse.ArgumentParser, split: str = "val") -> None:
    group = parser.add_argument_group("simulator")
    group.add_argument("--task", default="pointnav", choices=TASKS)
    group.add_argument("--split", default=split, choices=SPLITS)
    group.add_argument("--num-envs", type=int, default=16, help="environments stepped together (default 16)")
    group.add_argument("--resolution", type=int, default=64, help="square image size in pixels (default 64)")
    group.add_argument(
        "--sensors", nargs="*", default=["depth"], choices=SENSORS, help="cameras (default depth)"
    )
    group.add_argument(
        "--families",
        nargs="+",
        default=list(SCENE_FAMILIES),
        choices=SCENE_FAMILIES,
        help="scene families to use (default: all)",
    )
    group.add_argument("--episodes-file", default=None, help="habitat PointNav .json(.gz) episodes to run")
    group.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    group.add_argument("--seed", type=int, default=0)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "episodes",
        help="write a split's episodes as a habitat PointNav dataset",
        description="Write the fixed episode set of a split in habitat-lab's "
        "PointNav dataset format (.json or .json.gz).",
    )
    parser.add_argument("out", help="output file, e.g. val.json.gz")
    parser.add_argument("--split", default="val", choices=("val", "test"))
    parser.add_argument("--families", nargs="+", default=list(SCENE_FAMILIES), choices=SCENE_FAMILIES)
    parser.set_defaults(run=_run_episodes)


def _run_episodes(args) -> None:
    config = SimConfig(split=args.split, scene_families=tuple(args.families))
    episodes = episodes_for(config)
    save_episodes(episodes, args.out)
    print(f"wrote {len(episodes)} {args.split} episodes to {args.out}")
