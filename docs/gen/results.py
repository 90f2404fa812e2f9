"""The results index: one section per benchmarks/results/**/*.json, its tables generated at build time.

The benchmark scripts write {"machine": ..., "results": ...} (benchmarks/report.py write_json); a few write
more sections (train_throughput: "machines", "args", "sections"); the subfolders hold the evaluations
(zoo/, learning*/: name -> record) and the transfer sweeps (transfer/). Every list of records, and every
mapping of names to records, found in the JSON becomes a table; the scalars beside it become a line of
settings. The date is the file's last commit (its modification time where git does not know it), the
machine the JSON's, the command the script of that name (for a transfer sweep, its `navzoo finetune`).
docs/gen/tables.py reuses these helpers for the tables of the hand-written results pages.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"
MAX_ROWS = 60  # a table past this is cut, with a note saying how many rows the file holds
MACHINE_KEYS = ("cpu", "cores", "cpu_count", "gpu", "gpu_count", "device", "torch", "numba", "navzoo_commit")


def results_page(results: Path = RESULTS) -> str:
    files = sorted(results.rglob("*.json"), key=lambda p: (len(p.relative_to(results).parts), p))
    lines = [
        "# Results",
        "",
        "<!-- Generated at build time from benchmarks/results/**/*.json; rerun a benchmark to change it. -->",
        "",
        "The measurements the benchmark scripts saved under `benchmarks/results/`, as tables generated when "
        "this site is built. Each section gives the file, its date (the last commit that changed it), the "
        "machine it was measured on and the command that writes it. Rerun a script to replace its file.",
        "",
    ]
    if not files:
        lines.append("No results are saved yet.")
    for path in files:
        lines += file_section(path, results)
    return "\n".join(lines) + "\n"


def file_section(path: Path, results: Path = RESULTS) -> list[str]:
    data = json.loads(path.read_text())
    name = path.relative_to(results).with_suffix("").as_posix()
    lines = [f"## {name}", ""]
    facts = [f"file `benchmarks/results/{name}.json`", f"date {file_date(path)}"]
    script = command_for(path, data)
    if script:
        facts.append(f"command `{script}`")
    lines += ["- " + fact for fact in facts]
    machines = data.get("machines") if isinstance(data, dict) else None
    machine = data.get("machine") if isinstance(data, dict) else None
    if isinstance(machine, dict):
        lines.append(f"- machine: {describe_machine(machine)}")
    if isinstance(machines, dict):
        for section, info in machines.items():
            if isinstance(info, dict):
                lines.append(f"- machine of `{section}`: {describe_machine(info)}")
    if isinstance(data, dict) and isinstance(data.get("args"), dict):
        args = " ".join(f"{k}={_cell(v)}" for k, v in data["args"].items() if v not in (None, [], False))
        lines.append(f"- arguments: `{args}`")
    lines.append("")
    body = (
        {k: v for k, v in data.items() if k not in ("machine", "machines", "args")}
        if isinstance(data, dict)
        else data
    )
    tables = list(find_tables(body, ""))
    if not tables:
        lines += ["This file holds no table of records.", ""]
    for where, settings, rows in tables:
        if where:
            lines += [f"### {where}", ""]
        if settings:
            lines += ["Settings: " + ", ".join(f"{k} = {_cell(v)}" for k, v in settings.items()) + ".", ""]
        lines += markdown_table(rows)
        lines.append("")
    return lines


def find_tables(value: Any, where: str):
    """(location, scalars beside the records, records) for every list of records in `value`, and every
    mapping of names to records (a record per agent, checkpoint or setting, its name in a first column)."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        yield where, {}, value
        return
    if not isinstance(value, dict):
        return
    if value and all(_record(v) for v in value.values()):
        yield where, {}, [{"name": k, **v} for k, v in value.items()]
        for key, inner in value.items():  # the records' own lists (an agent's results by distance)
            for key2, deeper in inner.items():
                if not _scalar(deeper):
                    name = f"{where} / {key} / {key2}" if where else f"{key} / {key2}"
                    yield from find_tables(deeper, name)
        return
    settings = {k: v for k, v in value.items() if _scalar(v)}
    first = True
    flat = {k: v for k, v in value.items() if isinstance(v, dict) and v and all(map(_scalar, v.values()))}
    if flat:  # sections of scalars side by side (e.g. mesh_round_trip's start_geodesic_ratio): one table
        yield where, settings, [{"name": k, **v} for k, v in flat.items()]
        first = False
    for key, inner in value.items():
        if _scalar(inner) or key in flat:
            continue
        name = f"{where} / {key}" if where else str(key)
        for found_where, found_settings, rows in find_tables(inner, name):
            if first and settings and found_where == name:
                found_settings = {**settings, **found_settings}
                first = False
            yield found_where, found_settings, rows


def markdown_table(rows: list[dict]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        columns += [k for k, v in row.items() if k not in columns and _shown(v)]
    lines = ["| " + " | ".join(_text(c) for c in columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows[:MAX_ROWS]:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    if len(rows) > MAX_ROWS:
        lines += ["", f"The first {MAX_ROWS} of {len(rows)} rows; the file has them all."]
    return lines


def describe_machine(info: dict) -> str:
    parts = [f"{k} {_cell(info[k])}" for k in MACHINE_KEYS if info.get(k) not in (None, "")]
    return ", ".join(parts) or "not recorded"


def file_date(path: Path) -> str:
    try:
        done = subprocess.run(
            ["git", "log", "-1", "--format=%cs", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        if done.stdout.strip():
            return done.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return datetime.date.fromtimestamp(path.stat().st_mtime).isoformat() + " (not committed)"


def command_for(path: Path, data: Any = None) -> str | None:
    """`python benchmarks/<script>.py` for the script whose name the file's name starts with; for a transfer
    sweep (`navzoo finetune --setting all` writes its sweep.json), the finetune command."""
    if isinstance(data, dict) and {"task", "base_model", "frames", "settings"} <= set(data):
        return (
            f"navzoo finetune --task {data['task']} --setting all --from {data['base_model']} "
            f"--frames {data['frames']}"
        )
    scripts = sorted((p.stem for p in BENCHMARKS.glob("*.py")), key=len, reverse=True)
    for stem in scripts:
        if path.stem == stem or path.stem.startswith(stem + "-"):
            return f"python benchmarks/{stem}.py"
    return None


def _record(value: Any) -> bool:
    """A mapping mostly of scalars: one row of a table (an agent's results, a checkpoint's evaluation)."""
    return isinstance(value, dict) and 2 * sum(map(_scalar, value.values())) > len(value)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _shown(value: Any) -> bool:
    """Whether a column is worth showing: scalars and short lists of scalars."""
    return _scalar(value) or (
        isinstance(value, list | tuple) and len(value) <= 4 and all(_scalar(v) for v in value)
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != 0 and (abs(value) < 1 or abs(value) >= 1e6):
            return f"{value:.3g}"
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list | tuple):
        return _text(", ".join(_cell(v) for v in value)) if len(value) <= 4 else f"{len(value)} values"
    if isinstance(value, dict):
        return f"{len(value)} fields"
    return _text(str(value))


def _text(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")
