"""The `navzoo` command line: one thin module per command, each parsing its options and calling one library
function. Nothing outside this package (and the `cli` / `*_cli` modules of train, transfer, hub and demo)
imports argparse."""

from navzoo.cli.main import main

__all__ = ["main"]
