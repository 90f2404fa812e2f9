"""The `navzoo` command line. Each subcommand lives next to the code it drives and registers itself here.

Only the module of the command being run is imported, and those modules import their heavy dependencies
(torch, the simulator, the Hub client) when the command runs: `navzoo --help` and `navzoo COMMAND --help`
answer without loading torch.
"""

import argparse
import importlib
import re
import sys

from navzoo.cli.os_errors import describe_os_error
from navzoo.errors import ConfigError, NavzooError, closest
from navzoo.version import __version__

# name -> (module that registers it, one-line help shown by `navzoo --help`)
COMMANDS = {
    "train": ("navzoo.train.cli", "train a PointGoal agent with DD-PPO or imitation"),
    "finetune": ("navzoo.transfer.cli", "transfer a PointGoal model to Flee or Explore (DD-PPO's settings)"),
    "eval": ("navzoo.cli.eval", "evaluate baselines and trained models on PointGoal, Flee or Explore"),
    "episodes": ("navzoo.cli.episodes", "write a split's episodes as a habitat PointNav dataset"),
    "export-scenes": (
        "navzoo.cli.export_scenes",
        "write scenes and episodes as a habitat-sim / habitat-lab scene dataset",
    ),
    "convert": ("navzoo.cli.convert", "convert a habitat-baselines checkpoint to navzoo's format, or back"),
    "push": (
        "navzoo.hub.push_cli",
        "publish a model or training-run folder to the Hugging Face Hub",
    ),
    "pull": (
        "navzoo.hub.pull_cli",
        "download a model into the cache navzoo.load reads and print where it is",
    ),
    "demo": ("navzoo.demo.cli", "web app: watch an agent navigate, replay saved episodes"),
}

OVERRIDE = re.compile(r"^[A-Za-z_][\w.-]*=")  # a config override such as ppo.lr=1e-4


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the full options of `command` and a one-line summary of the other commands."""
    parser = argparse.ArgumentParser(
        prog="navzoo", description="navzoo: embodied-navigation model zoo and transfer-learning toolkit"
    )
    parser.add_argument("--version", action="version", version=f"navzoo {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback of an error instead of its one line"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, summary) in COMMANDS.items():
        if name == command:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command(argv)
    parser = build_parser(command)
    # KEY=VALUE overrides may sit anywhere, also after options that take several values (--scene-families
    # a b), so commands that take them get them set aside before argparse sees the rest.
    overrides = [a for a in argv if OVERRIDE.match(a)] if _takes_overrides(parser, command) else []
    args = parser.parse_args([a for a in argv if a not in overrides])
    if overrides:
        args.overrides = [*args.overrides, *overrides]
    try:
        return args.run(args) or 0
    except NavzooError as exc:
        if args.debug:
            raise
        # Library errors name the setting; on the command line, name the option that sets it too.
        option = _option(parser, args.command, exc.field) if isinstance(exc, ConfigError) else None
        print(
            f"navzoo {args.command}: error: {exc}{f' (the {option} option)' if option else ''}",
            file=sys.stderr,
        )
        return 2
    except OSError as exc:
        if args.debug:
            raise
        print(f"navzoo {args.command}: error: {describe_os_error(exc)}", file=sys.stderr)
        return 2


def _command(argv: list[str]) -> str | None:
    """The command a command line names (its first word that is not an option), or None. A near miss of a
    command's name stops here with a suggestion."""
    word = next((a for a in argv if not a.startswith("-")), None)
    if word is None or word in COMMANDS:
        return word
    close = closest(word, COMMANDS)
    hint = f"; did you mean {close!r}?" if close else f" (choose from {', '.join(COMMANDS)})"
    print(f"navzoo: error: unknown command {word!r}{hint}", file=sys.stderr)
    raise SystemExit(2)


def _takes_overrides(parser: argparse.ArgumentParser, command: str | None) -> bool:
    if command is None:
        return False
    return any(action.dest == "overrides" for action in _subparser(parser, command)._actions)


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subcommands.choices[command]


def _option(parser: argparse.ArgumentParser, command: str, field: str) -> str | None:
    """The option of `navzoo COMMAND` that sets `field` (a library argument or config key), if any."""
    for action in _subparser(parser, command)._actions:
        if action.dest == field.replace("-", "_") and action.option_strings:
            return max(action.option_strings, key=len)
    return None


if __name__ == "__main__":
    sys.exit(main())
