"""Tables of the hand-written results pages, generated at build time from benchmarks/results/**/*.json.

A page asks for a table with a placeholder, an HTML comment naming a result file and, as YAML, what to show:

    <!-- results-table: zoo/zoo_eval.json
    rows: {val: results.val, test: results.test}
    columns: {Agent: "{key}", Val SPL: "{val.spl:.3f} ± {val.spl_ci95:.3f}"}
    -->

The hook (docs/gen/hooks.py `on_page_markdown`) replaces it with a one-line caption (the file, its date, the
machine and the command, as the results index gives them) and the table. The options:

- `rows`: where the records are, a dotted path into the JSON. A list of records gives one row each; a mapping
  of records (name: record) one row each, its name in the row as `key`. A mapping of paths (`{val:
  results.val, test: results.test}`) joins mappings of records by name: the row has `key`, `val` and `test`.
- `select`: the names (of a mapping of records) to show, in this order; `where`: {field: value} a row must
  match to be shown; `last: true`: each record is itself a mapping (a run's checkpoints), and the row is its
  last entry, with `key` the run's name and `count` its number of entries.
- `pivot`: {index: [fields], columns: [fields], values: [fields]} turns rows that differ only in the
  `columns` fields into one row per `index`, with a field "<columns' values> <value>" per value
  (`depth 64 fps`).
- `columns`: {header: template}, a template being text with `{path}` fields (`{val.spl_ci95[1]:.3f}`,
  `{curve[-1].metric}`), formatted with the spec after `:` or, without one, as the results index formats
  numbers; a list of paths shows each under its own name.

A single value in a sentence is an inline placeholder, `result:` instead of `results-table:`, replaced by the
value alone (no caption: the page's table or text names the file):

    Val SPL <!-- result: zoo/zoo_eval.json results.val.navzoo-pointnav-depth.spl :.3f --> on 300 episodes.

- The short form is the file, a path to one value (no spaces) and, optionally, a format spec after `:`
  (without one the value is formatted as the results index formats numbers).
- The long form is YAML: a `value` template, as a table's column, and the table's `rows`, `select`, `where`,
  `last` and `pivot`, which must leave exactly one row; with none of them the row is the whole file:

      <!-- result: sim_throughput-cpu.json {rows: results.rows, value: "{fps:,.0f}",
           where: {renderer: numba, threads: 2, envs: 256, sensor: depth, resolution: 64}} -->

Paths are dotted (`results.val`). In brackets: a key of a mapping, also one that holds dots (`ratios[0.5]`,
`runs/x[ckpt-000000200.pt]`); otherwise a number, an item of a list or the n-th entry of a mapping in the
file's order (`curve[-1]`, `runs/depth-ks01[-1]`: a run's last checkpoint).

A file, a path or a field that is not there, or an inline placeholder that leaves no row or several, fails
the build with a message naming the page and the file.
"""

from __future__ import annotations

import json
import re
import string
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))  # results.py, also when a test imports this

from results import RESULTS, _cell, command_for, describe_machine, file_date

PLACEHOLDER = re.compile(r"<!--\s*results-table:\s*(?P<file>\S+)(?P<options>.*?)-->", re.DOTALL)
INLINE = re.compile(r"<!--\s*result:\s*(?P<file>\S+)(?P<options>.*?)-->", re.DOTALL)
SHORT = re.compile(r"\s*(?P<path>[^\s:{][^\s:]*)\s*(?::(?P<spec>\S*))?\s*")  # PATH [:SPEC]
ROW_OPTIONS = {"rows", "select", "where", "last", "pivot"}
OPTIONS = ROW_OPTIONS | {"columns"}
INLINE_OPTIONS = ROW_OPTIONS | {"value"}


class TableError(ValueError):
    """A placeholder that names a file, a path or a field the result files do not have."""


def render_placeholders(markdown: str, page: str, results: Path = RESULTS) -> str:
    """`markdown` with every results-table placeholder replaced by its caption and table, and every inline
    result placeholder by its value."""

    def table(match: re.Match) -> str:
        try:
            return "\n".join(render_table(match["file"], match["options"], results))
        except TableError as error:
            raise TableError(f"{page}: results-table {match['file']}: {error}") from None

    def value(match: re.Match) -> str:
        try:
            return render_value(match["file"], match["options"], results)
        except TableError as error:
            raise TableError(f"{page}: result {match['file']}: {error}") from None

    return INLINE.sub(value, PLACEHOLDER.sub(table, markdown))


def render_table(name: str, options_text: str, results: Path = RESULTS) -> list[str]:
    path, data = load(name, results)
    options = parse_options(options_text, OPTIONS, "columns")
    rows = select_rows(data, options)
    if not rows:
        raise TableError("no row matches the placeholder")
    columns = options["columns"]
    if isinstance(columns, list):
        columns = {str(c): "{" + str(c) + "}" for c in columns}
    lines = [caption(path, data, results), ""]
    lines.append("| " + " | ".join(_escape(str(h)) for h in columns) + " |")
    lines.append("|" + " --- |" * len(columns))
    for row in rows:
        lines.append("| " + " | ".join(fill(str(t), row) for t in columns.values()) + " |")
    return [*lines, ""]


def render_value(name: str, options_text: str, results: Path = RESULTS) -> str:
    """The one value an inline placeholder asks for, formatted: `PATH [:SPEC]`, or the options of a table
    with a `value` template that must leave exactly one row."""
    _, data = load(name, results)
    short = SHORT.fullmatch(options_text)
    if short:
        found = lookup(data, short["path"])
        if isinstance(found, dict | list):
            raise TableError(f"`{short['path']}` is not a single value")
        text = _Formatter().format_field(found, short["spec"] or "")
    else:
        options = parse_options(options_text, INLINE_OPTIONS, "value")
        rows = select_rows(data, options) if set(options) & ROW_OPTIONS else [data]
        if len(rows) != 1:
            raise TableError(f"the placeholder leaves {len(rows)} rows, not one")
        text = _Formatter().vformat(str(options["value"]), (), {"row": rows[0]})
    return " ".join(text.split()).replace("<", "&lt;")


def load(name: str, results: Path = RESULTS) -> tuple[Path, Any]:
    path = results / name
    if not path.is_file():
        raise TableError(f"no result file benchmarks/results/{name}")
    return path, json.loads(path.read_text())


def parse_options(text: str, allowed: set[str], required: str) -> dict:
    try:
        options = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise TableError(f"its options are not YAML: {error}") from None
    if not isinstance(options, dict) or not set(options) <= allowed or required not in options:
        raise TableError(f"its options must be a mapping with `{required}`, of {sorted(allowed)}")
    return options


def caption(path: Path, data: Any, results: Path = RESULTS) -> str:
    """The file, its date, the machine and the command, as one line."""
    facts = [f"`benchmarks/results/{path.relative_to(results).as_posix()}`", file_date(path)]
    if isinstance(data, dict) and isinstance(data.get("machine"), dict):
        facts.append(describe_machine(data["machine"]))
    command = command_for(path, data)
    if command:
        facts.append(f"`{command}`")
    return "*From " + "; ".join(facts) + ".*"


def select_rows(data: Any, options: dict) -> list[dict]:
    where = options.get("rows", "")
    if isinstance(where, dict):  # join mappings of records by name
        sources = {name: lookup(data, str(p)) for name, p in where.items()}
        first = next(iter(sources.values()), {})
        if not isinstance(first, dict):
            raise TableError(f"`{next(iter(where.values()))}` is not a mapping of records")
        rows = [{"key": k, **{n: _get(s, k, n) for n, s in sources.items()}} for k in first]
    else:
        found = lookup(data, str(where)) if where else data
        if isinstance(found, dict):
            rows = [
                {"key": k, **v} if isinstance(v, dict) else {"key": k, "value": v} for k, v in found.items()
            ]
        elif isinstance(found, list):
            rows = [r if isinstance(r, dict) else {"value": r} for r in found]
        else:
            raise TableError(f"`{where}` holds no records")
    if "select" in options:
        by_key = {row.get("key"): row for row in rows}
        missing = [k for k in options["select"] if k not in by_key]
        if missing:
            raise TableError(f"no record named {', '.join(map(str, missing))} in `{where}`")
        rows = [by_key[k] for k in options["select"]]
    for field, value in (options.get("where") or {}).items():
        rows = [row for row in rows if lookup(row, str(field)) == value]
    if options.get("last"):
        rows = [_last(row) for row in rows]
    if "pivot" in options:
        rows = pivot(rows, **options["pivot"])
    return rows


def pivot(rows: list[dict], index: list[str], columns: list[str], values: list[str]) -> list[dict]:
    out: dict[tuple, dict] = {}
    for row in rows:
        key = tuple(lookup(row, f) for f in index)
        target = out.setdefault(key, dict(zip(index, key, strict=True)))
        name = " ".join(str(lookup(row, f)) for f in columns)
        for value in values:
            target[f"{name} {value}"] = lookup(row, value)
    return list(out.values())


class _Formatter(string.Formatter):
    def get_field(self, field_name, args, kwargs):
        return lookup(kwargs["row"], field_name), field_name

    def format_field(self, value, format_spec):
        if not format_spec:
            return _cell(value)
        try:
            return format(value, format_spec)
        except (TypeError, ValueError) as error:
            raise TableError(f"cannot format {value!r} as `{format_spec}`: {error}") from None


def fill(template: str, row: dict) -> str:
    return _escape(_Formatter().vformat(template, (), {"row": row}))


def lookup(value: Any, path: str) -> Any:
    """The value at a dotted path with items in brackets: `results.rows`, `curve[-1].metric`; in brackets a
    mapping's key (`ratios[0.5]`), or else its n-th entry (`runs/a[-1]`)."""
    for part in re.findall(r"\[[^\]]*\]|[^.\[\]]+", path):
        if part.startswith("["):
            inner = part[1:-1]
            if isinstance(value, dict) and inner in value:
                value = value[inner]
                continue
            try:
                value = (list(value.values()) if isinstance(value, dict) else value)[int(inner)]
            except (ValueError, IndexError, TypeError, KeyError):
                raise TableError(f"no item {part} at `{path}`") from None
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise TableError(f"no key '{part}' at `{path}`")
    return value


def _get(mapping: Any, key: str, name: str) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise TableError(f"no record named {key} in the rows' `{name}`")
    return mapping[key]


def _last(row: dict) -> dict:
    entries = [v for k, v in row.items() if k != "key" and isinstance(v, dict)]
    if not entries:
        raise TableError(f"record {row.get('key')} holds no entries")
    return {**entries[-1], "key": row.get("key"), "count": len(entries)}


def _escape(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")
