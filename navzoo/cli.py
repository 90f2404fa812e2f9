"""The `navzoo` command line. Each subcommand lives next to the code it drives and registers itself here."""

import argparse
import sys

from navzoo.errors import NavzooError


def build_parser() -> argparse.ArgumentParser:
    from navzoo import eval_cli, sim_cli
    from navzoo.demo import cli as demo_cli
    from navzoo.hub import convert, pull, push
    from navzoo.train import cli as train_cli
    from navzoo.transfer import cli as transfer_cli

    parser = argparse.ArgumentParser(
        prog="navzoo", description="navzoo: embodied-navigation model zoo and transfer-learning toolkit"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (train_cli, transfer_cli, eval_cli, sim_cli, convert, push, pull, demo_cli):
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args) or 0
    except NavzooError as exc:
        print(f"navzoo {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
