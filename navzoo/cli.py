"""The `navzoo` command line. Each subcommand lives next to the code it drives and registers itself here."""

import argparse
import sys

from navzoo.errors import ConfigError, NavzooError


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
    args, extras = parser.parse_known_args(argv)
    # argparse stops filling positionals at the first option: `train PRESET --run-dir R KEY=VALUE` leaves
    # the overrides after --run-dir unparsed, so commands that take KEY=VALUE overrides collect them here.
    if extras and hasattr(args, "overrides") and all("=" in e and not e.startswith("-") for e in extras):
        args.overrides = [*args.overrides, *extras]
    elif extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    try:
        return args.run(args) or 0
    except NavzooError as exc:
        # Library errors name the setting; on the command line, name the option that sets it too.
        option = _option(parser, args.command, exc.field) if isinstance(exc, ConfigError) else None
        print(
            f"navzoo {args.command}: error: {exc}{f' (the {option} option)' if option else ''}",
            file=sys.stderr,
        )
        return 2


def _option(parser: argparse.ArgumentParser, command: str, field: str) -> str | None:
    """The option of `navzoo COMMAND` that sets `field` (a library argument or config key), if any."""
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for action in subcommands.choices[command]._actions:
        if action.dest == field.replace("-", "_") and action.option_strings:
            return max(action.option_strings, key=len)
    return None


if __name__ == "__main__":
    sys.exit(main())
