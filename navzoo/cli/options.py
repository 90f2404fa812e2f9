"""Options shared by the commands: the simulator, device, threads, resolution and scene families.

An option means the same on every command that has it: `--device` takes the names training's `device` key
takes and defaults to auto; `--threads 0` is automatic; `--scene-families` is SimConfig.scene_families;
`--scenes-dir` and `--scene-dataset` are SimConfig.scenes_dir and scene_dataset.
"""

import argparse

from navzoo.errors import ConfigError
from navzoo.sim.config import SCENE_FAMILIES, SENSORS, SPLITS, TASKS


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
    add_episode_options(group)
    add_device_option(group, "where the simulator and the models run")
    group.add_argument("--seed", type=int, default=0, help="seed of the sampled actions (default 0)")


def add_episode_options(parser) -> None:
    """--episodes-file, with --scenes-dir and --scene-dataset to run it on scanned meshes: every command that
    runs an episodes file runs it on meshes too."""
    parser.add_argument(
        "--episodes-file",
        default=None,
        metavar="FILE",
        help="habitat PointNav .json(.gz) episodes to run instead of the split's (default none)",
    )
    add_scene_options(parser)


def add_scene_options(parser, prefix: str = "") -> None:
    """--scenes-dir and --scene-dataset (SimConfig.scenes_dir and scene_dataset, `prefix` naming the config
    block on the training commands): an episodes file's scenes as scanned meshes."""
    parser.add_argument(
        "--scenes-dir",
        default=None,
        metavar="DIR",
        help=f"{prefix}scenes_dir: the folder the episodes file's scene ids (mesh paths) are relative to, "
        "habitat's data/scene_datasets; the episodes then run on those meshes (default: navzoo's own scenes)",
    )
    parser.add_argument(
        "--scene-dataset",
        default=None,
        metavar="FILE",
        help=f"{prefix}scene_dataset: the *.scene_dataset_config.json that orients the meshes, with "
        "--scenes-dir (default: habitat's default dataset, .glb meshes z-up)",
    )


DEVICES = "auto (CUDA when there is one, else the CPU), cpu, cuda or cuda:N"


def add_device_option(parser, what: str, default: str | None = "auto") -> None:
    """--device, as training's `device` key: a default of None leaves it to the config (auto)."""
    shown = default or "the config's, auto"
    parser.add_argument("--device", default=default, help=f"{what}: {DEVICES} (default {shown})")


def resolve_device(device: str) -> str:
    """The device --device names; "auto" is CUDA when there is one, else the CPU, as in training."""
    if device != "auto":
        return device
    import torch  # when a command runs: the parsers load without torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def add_threads_option(parser, what: str, automatic: str, default: int | None = 0) -> None:
    """--threads N, with 0 for automatic on every command (`automatic` says what that is there); a default
    of None leaves it to the config."""
    shown = "the config's torch_threads" if default is None else default
    text = f"{what}; 0 is automatic: {automatic} (default {shown})"
    parser.add_argument("--threads", type=int, default=default, metavar="N", help=text)


def set_threads(threads: int) -> None:
    """torch's intra-op threads in a one-process command: `threads`, or with 0 torch's own choice."""
    if threads < 0:
        raise ConfigError("threads", threads, "0 (automatic) or a positive integer")
    if threads:
        import torch

        torch.set_num_threads(threads)


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
    """--scene-families (SimConfig.scene_families)."""
    parser.add_argument(
        "--scene-families",
        dest="scene_families",
        nargs="+",
        metavar="FAMILY",
        default=None if default is None else list(default),
        choices=SCENE_FAMILIES,
        help=what or f"scene families to use: {', '.join(SCENE_FAMILIES)} (default: all)",
    )
