"""The generated reference pages: the command line (from navzoo's argparse parsers) and the config fields
(from the dataclasses and the comments beside their fields). The mkdocs hook (docs/gen/hooks.py) calls
`cli_page` and `config_page` at build time, so the pages follow the code."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import html
import inspect
import io
import os
import re
import textwrap
import tokenize
from typing import Any

# The config classes of the reference, by page section: (title, intro, [(class path, key prefix)]).
CONFIG_SECTIONS = [
    (
        "Simulator: `SimConfig`",
        "`navzoo.sim.config.SimConfig`: one batch of simulated environments. A training config's `sim` "
        "block and `navzoo eval`'s options set these fields.",
        [("navzoo.sim.config.SimConfig", "")],
    ),
    (
        "Training: `TrainConfig` and its blocks",
        "`navzoo.train.config.TrainConfig`: a preset or YAML file plus `key=value` overrides "
        "(`navzoo train`). Keys of a block are written `block.field`, e.g. `ppo.lr=1e-4`.",
        [
            ("navzoo.train.config.TrainConfig", ""),
            ("navzoo.train.config_blocks.PPOConfig", "ppo."),
            ("navzoo.train.config_blocks.ImitationConfig", "imitation."),
            ("navzoo.train.config_blocks.DistributedConfig", "distributed."),
            ("navzoo.train.config_blocks.WandbConfig", "wandb."),
            ("navzoo.train.stage_config.StageConfig", "stages.N."),
        ],
    ),
    (
        "Transfer: `TransferConfig`",
        "`navzoo.transfer.config.TransferConfig`: what a `navzoo finetune` run transfers "
        "(`transfer.yaml` in its run folder); its training runs under a `TrainConfig` as above.",
        [("navzoo.transfer.config.TransferConfig", "")],
    ),
]


# ---------------------------------------------------------------------------------------------- the CLI


def cli_page() -> str:
    """Markdown for every `navzoo` subcommand: usage, description, arguments and options, epilog."""
    from navzoo.cli.main import COMMANDS, build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal's width
    try:
        top = build_parser(None)
        lines = [
            "# Command line",
            "",
            "<!-- Generated at build time from navzoo.cli.main.build_parser; edit the parsers, not this. -->",
            "",
            f"`navzoo` ({_escape(top.description or '')}). Options of the `navzoo` command itself:",
            "",
            *_options_table(top, skip_subparsers=True),
            "",
            "| command | what it does |",
            "| --- | --- |",
            *[
                f"| [`{name}`](#navzoo-{name}) | {_escape(summary)} |"
                for name, (_, summary) in COMMANDS.items()
            ],
            "",
        ]
        for name in COMMANDS:
            parser = _subparser(build_parser(name), name)
            lines += [f"## navzoo {name}", "", "```text", parser.format_usage().strip(), "```", ""]
            if parser.description:
                lines += [_escape(parser.description), ""]
            lines += [*_options_table(parser), ""]
            if parser.epilog:
                lines += [_escape(parser.epilog), ""]
        return "\n".join(lines)
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[command]


def _options_table(parser: argparse.ArgumentParser, skip_subparsers: bool = False) -> list[str]:
    formatter = parser._get_formatter()
    rows = ["| argument | default | meaning |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and skip_subparsers:
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            value = "" if action.nargs == 0 else " " + formatter._format_args(action, action.dest.upper())
            spelling = ", ".join(f"`{s}{value}`" for s in action.option_strings)
        else:
            spelling = f"`{formatter._format_args(action, action.dest)}`"
        default = action.default
        shown = (
            ""
            if default in (None, argparse.SUPPRESS, False) or action.nargs == 0
            else f"`{' '.join(map(str, default)) if isinstance(default, list | tuple) else default}`"
        )
        meaning = formatter._expand_help(action) if action.help else ""
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            meaning += f" (one of: {', '.join(f'`{c}`' for c in action.choices)})"
        rows.append(f"| {_escape(spelling, code_ok=True)} | {shown} | {_escape(meaning)} |")
    return rows


def _code(text: str) -> str:
    """Inline code for a table cell: a `|` inside backticks would end the cell, so this is HTML."""
    return "<code>" + html.escape(" ".join(text.split())).replace("|", "&#124;") + "</code>"


def _escape(text: str, code_ok: bool = False) -> str:
    """Text for one Markdown table cell or paragraph: pipes escaped, whitespace joined."""
    text = " ".join(text.split()).replace("|", "\\|")
    return text if code_ok else text.replace("<", "&lt;").replace(">", "&gt;")


# ----------------------------------------------------------------------------------------- the configs


@dataclasses.dataclass
class Field:
    key: str  # the name a config file or override uses, with its block prefix
    type: str  # the annotation as written in the source
    default: str
    meaning: str
    source: str  # "comment" or "docstring"


def config_page() -> str:
    """Markdown tables of every config field: type, default and meaning."""
    lines = [
        "# Configuration",
        "",
        "<!-- Generated at build time from the config dataclasses and the comments beside their fields. -->",
        "",
        "Every field with its type, default and meaning, read from the dataclasses and the comments "
        "beside their fields when the site is built. Unknown keys are refused with a did-you-mean, and "
        "every value is checked against its type (`navzoo.config_base`).",
        "",
    ]
    for title, intro, classes in CONFIG_SECTIONS:
        lines += [f"## {title}", "", intro, ""]
        for path, prefix in classes:
            cls = _import(path)
            doc = inspect.getdoc(cls)
            lines += [f"### `{cls.__name__}`" + (f" (`{prefix}*`)" if prefix else ""), ""]
            if doc and not doc.startswith(f"{cls.__name__}("):
                lines += [_escape(doc.split("\n\n")[0]), ""]
            lines += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
            for f in config_fields(cls, prefix):
                lines.append(f"| `{f.key}` | {_code(f.type)} | {_code(f.default)} | {_escape(f.meaning)} |")
            lines.append("")
    return "\n".join(lines)


def config_fields(cls: type, prefix: str = "") -> list[Field]:
    """The fields of a config dataclass in order, each with its meaning: the comment above or beside it in
    the source (field_comments). A field without one is an error, so the page stays whole."""
    comments = field_comments(cls)
    out = []
    for f in dataclasses.fields(cls):
        name = f"{cls.__name__}.{f.name}"
        meaning = comments.get(f.name, "")
        if not meaning:
            raise ValueError(f"{name} has no comment above or beside it in the source")
        out.append(Field(prefix + f.name, _annotation(cls, f.name), _default(cls, f), meaning, "comment"))
    return out


def field_comments(cls: type) -> dict[str, str]:
    """Field name -> the comment lines just above it and the comment at the end of its line, joined; a field
    without either takes the comment above the run of fields it ends (no blank line between) where that
    comment names it."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    trailing = {
        tok.start[0]: tok.string.lstrip("#").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT and lines[tok.start[0] - 1].split("#")[0].strip()
    }
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    out = {}
    group = ""  # the comment block above the run of fields this one belongs to (no blank line between)
    previous_end = -1
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        above = []
        row = stmt.lineno - 2  # the line above, 0-based
        while row >= 0 and lines[row].strip().startswith("#"):
            above.insert(0, lines[row].strip().lstrip("#").strip())
            row -= 1
        beside = [
            trailing[n] for n in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1) if n in trailing
        ]
        if above:
            group = " ".join(above)
        elif stmt.lineno != previous_end + 1:
            group = ""
        previous_end = stmt.end_lineno or stmt.lineno
        text = " ".join([*above, *beside]).strip()
        # A comment above several fields describes all of them where it names them ("... and
        # actor_warmup_updates", "the scene dataset config").
        if not text and group and "_" in name and _names(group, name):
            text = group
        if text:
            out[name] = text
    return out


def _names(text: str, name: str) -> bool:
    """Whether `text` names the field `name` (with underscores or spaces), as a whole word."""
    spellings = (re.escape(name), re.escape(name.replace("_", " ")))
    return any(re.search(rf"(?<![\w.]){s}(?!\w)", text) for s in spellings)


def _annotation(cls: type, name: str) -> str:
    source = textwrap.dedent(inspect.getsource(cls))
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            return ast.unparse(stmt.annotation)
    raise KeyError(name)


def _default(cls: type, f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return _plain(f.default)
    if f.default_factory is dataclasses.MISSING:
        return "required"
    value = f.default_factory()
    if dataclasses.is_dataclass(value):
        changed = {
            g.name: getattr(value, g.name)
            for g in dataclasses.fields(value)
            if g.default is not dataclasses.MISSING and getattr(value, g.name) != g.default
        }
        inner = ", ".join(f"{k}={_plain(v)}" for k, v in changed.items())
        return f"{type(value).__name__}({inner})"
    return _plain(value)


def _plain(value: Any) -> str:
    """A default as a config file would hold it: tuples as lists, None as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and (abs(value) >= 1e5 or 0 < abs(value) < 1e-3):
        return f"{value:g}"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:_}"
    return str(value)


def _import(path: str) -> type:
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)
