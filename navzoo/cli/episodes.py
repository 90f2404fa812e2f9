"""`navzoo episodes`: a split's fixed episodes written as a habitat-lab PointNav dataset."""

from navzoo.cli.options import add_families_option
from navzoo.sim.config import SimConfig


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
    assert episodes is not None  # val and test (the --split choices) have fixed episodes
    save_episodes(episodes, args.out)
    print(f"wrote {len(episodes)} {args.split} episodes to {args.out}")
