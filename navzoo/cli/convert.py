"""`navzoo convert`: a habitat-baselines checkpoint to a navzoo folder, or back; the conversion itself is
navzoo.zoo.habitat_checkpoints's."""

from __future__ import annotations

import argparse
from pathlib import Path

from navzoo.cli.options import add_resolution_option, resolution
from navzoo.errors import NavzooError

CHECKPOINT_SUFFIXES = (".pth", ".pt")


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `navzoo convert` to a CLI; the parsed namespace's `run(args)` runs it and returns 0."""
    parser = subparsers.add_parser(
        "convert",
        help="convert a habitat-baselines checkpoint to navzoo's format, or back",
        description=(
            "To navzoo (SRC a .pth file): read it with weights-only loading, infer the architecture (or use "
            "--model) and write DST/config.json + DST/model.safetensors. To habitat (SRC a navzoo folder or "
            "model name): write DST as a habitat-baselines checkpoint of PointNavResNetPolicy, or of "
            "PointNavBaselinePolicy for policies with net='baseline', and print the habitat-baselines "
            "config overrides that build that policy."
        ),
    )
    parser.add_argument("src", help="habitat .pth checkpoint, or a navzoo model folder or name")
    parser.add_argument("dst", type=Path, help="output folder (to navzoo) or .pth file (to habitat)")
    parser.add_argument(
        "--to",
        choices=("navzoo", "habitat"),
        help="the direction (default: habitat when SRC is a folder or a model name, navzoo for a file)",
    )
    parser.add_argument("--model", help="zoo name whose architecture to use instead of inferring it")
    add_resolution_option(parser, "sensor size (default: inferred, square)")
    parser.add_argument(
        "--overwrite", action="store_true", help="write DST even if it exists (a non-empty folder or a file)"
    )
    parser.set_defaults(run=run_convert)
    return parser


def run_convert(args: argparse.Namespace) -> int:
    from navzoo.models import PolicyConfig
    from navzoo.models.weights import save_pretrained
    from navzoo.storage.destination import check_destination
    from navzoo.zoo.habitat_checkpoints import (
        export_habitat_checkpoint,
        habitat_override_lines,
        habitat_to_policy,
    )

    src = Path(args.src)
    # A file, or a path named like a checkpoint that is not there (habitat_to_policy says so), converts to
    # navzoo; a model folder or zoo name to habitat.
    to = args.to or ("navzoo" if src.is_file() or src.suffix in CHECKPOINT_SUFFIXES else "habitat")
    if to == "habitat" and (args.model or args.resolution):
        raise NavzooError(
            "--model and --resolution say how to read a habitat checkpoint; leave them out with --to habitat"
        )
    check_destination(args.dst, overwrite=args.overwrite, sources=[src], folder=to == "navzoo")
    if to == "habitat":
        import navzoo

        policy = navzoo.load(args.src)
        out = export_habitat_checkpoint(policy, args.dst)
        assert isinstance(policy.config, PolicyConfig)  # export_habitat_checkpoint refuses anything else
        overrides = habitat_override_lines(policy.config)
        print(
            f"wrote habitat-baselines checkpoint {out}; evaluate it with habitat-baselines' config overrides:"
        )
        print(f"    {overrides}")
        return 0
    policy = habitat_to_policy(src, model=args.model, resolution=resolution(args.resolution))
    out = save_pretrained(policy, args.dst)
    config = policy.config
    print(
        f"wrote {out}: {policy.name or 'unnamed'}, backbone {config.backbone}, net {config.net}, "
        f"sensors {', '.join(config.sensors)}, resolution {config.resolution}, "
        f"{config.rnn_type} {config.num_recurrent_layers}x{config.hidden_size}"
    )
    return 0
