"""`navzoo export-scenes`: scenes and episodes as a habitat-sim / habitat-lab scene dataset."""

from navzoo.cli.options import add_families_option
from navzoo.names import SPLITS


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "export-scenes",
        help="write scenes and episodes as a habitat-sim / habitat-lab scene dataset",
        description="Write one glTF mesh per scene, a habitat-sim scene dataset config and the scenes' "
        "PointNav episodes in habitat-lab's dataset layout (see navzoo.interop.habitat_scenes).",
    )
    parser.add_argument("out", help="folder to write: new, empty, or an earlier export to add to")
    parser.add_argument("--split", default="val", choices=SPLITS, help="the split (default val)")
    add_families_option(parser)
    parser.add_argument(
        "--count",
        type=int,
        default=None,
        help="scenes per family (default: all of a val or test split; required for train)",
    )
    parser.set_defaults(run=_run)


def _run(args) -> None:
    from navzoo.interop.habitat_scenes import export_scenes

    summary = export_scenes(args.out, args.split, tuple(args.scene_families), args.count)
    kept = f", {summary.kept} of them already there (an update adds to them)" if summary.kept else ""
    print(
        f"wrote {summary.scenes} scenes{kept} ({summary.triangles:,} triangles) and {summary.episodes} "
        f"{args.split} episodes to {summary.out}: {summary.bytes / 1e6:.1f} MB in {summary.seconds:.1f} s"
    )
