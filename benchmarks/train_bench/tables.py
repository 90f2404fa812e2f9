"""What the sections print: a Markdown table per section (report.markdown_table) and notes under it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from report import markdown_table

Cell = Callable[[dict], Any]  # a function of a row that returns the cell's value


def print_table(title: str, columns: list[tuple[str, Cell]], rows: list[dict]) -> None:
    """A Markdown table under a heading; each column is (header, function of a row)."""
    print(f"\n### {title}\n")
    print(markdown_table([(header, _text(get)) for header, get in columns], rows))
    sys.stdout.flush()


def _text(get: Cell) -> Callable[[dict], str | None]:
    def text(row: dict) -> str | None:
        try:
            value = get(row)
        except (KeyError, TypeError, ZeroDivisionError):  # a failed run's row lacks its measurements
            return None
        if isinstance(value, float):
            return f"{value:.2f}" if value < 10 else f"{value:,.0f}"
        return str(value)

    return text


def print_notes(notes: list[str]) -> None:
    print()
    for line in notes:
        print(f"- {line}")
    sys.stdout.flush()


def pct(key: str) -> Cell:
    return lambda row: f"{100 * row[key]:.1f}%"


def fps(key: str = "fps") -> Cell:
    return lambda row: f"{row[key]:,.1f}" if row[key] < 100 else f"{row[key]:,.0f}"


def size(row: dict) -> str:
    res = " " + "x".join(map(str, row["resolution"])) if row["sensors"] else ""
    return f"{row['num_envs']}x{row['num_steps']} {'+'.join(row['sensors']) or 'blind'}{res}"


TIME_SPLIT = [
    ("sim", pct("sim_fraction")),
    ("inference", pct("inference_fraction")),
    ("learning", pct("learning_fraction")),
]
