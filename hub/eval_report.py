"""The `navzoo eval` report `navzoo push` publishes: eval.json read within a size bound and checked for the
fields the model card and the commit message use, so that a damaged or hand-edited report is refused with a
message before anything is written, not midway with a traceback."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from navzoo.errors import NavzooError
from navzoo.tasks import get_task

EVAL_NAME = "eval.json"
MAX_REPORT_BYTES = 8 << 20  # thousands of episodes take a few MB
ENTRY_FIELDS = {"action_mode": str, "sim": dict, "summary": dict, "episodes": list, "replays": list}
DISTANCE_FIELDS = ("min_geodesic", "episodes", "success", "spl")


@dataclass(frozen=True)
class ModelEvaluation:
    """One model's entry of a report: the split, the agent's entry and its replay files."""

    path: Path  # the eval.json it came from
    split: str | None
    entry: dict[str, Any]
    replays: list[Path]


def read_model_evaluation(eval_dir: Path, folder: Path, task: str) -> ModelEvaluation:
    """The entry of the one model `eval_dir`'s report evaluates (the model of `folder`) on `task`;
    NavzooError naming the problem and the fix otherwise."""
    path = eval_dir / EVAL_NAME
    report = _read_json(path)
    agents = report.get("agents", {})
    if not isinstance(agents, dict) or not all(isinstance(e, dict) for e in agents.values()):
        raise _malformed(path, "its agents are not a mapping of agent names to entries")
    models = {label: entry for label, entry in agents.items() if entry.get("model") is not None}
    if len(models) != 1:
        raise NavzooError(
            f"{path} holds {len(models)} models ({', '.join(models) or 'none'}); push needs an evaluation of "
            f"this model alone: evaluate {folder} by itself, or leave the evaluation folder unset to "
            "evaluate it here"
        )
    (entry,) = models.values()
    config = report.get("config", {})
    if not isinstance(config, dict):
        raise _malformed(path, "its config is not a mapping")
    evaluated = config.get("task", "pointnav")
    if evaluated != task:
        raise NavzooError(
            f"{path} evaluates the model on {evaluated}, but it was trained for {task}: "
            f"evaluate it on {task}, or leave the evaluation folder unset to evaluate it here"
        )
    for field, kind in ENTRY_FIELDS.items():
        if not isinstance(entry.get(field), kind):
            raise _malformed(path, f"the model's {field} is missing or not a {kind.__name__}")
    _check_summary(path, entry["summary"], task)
    split = config.get("split")
    if split is not None and not isinstance(split, str):
        raise _malformed(path, "its split is not a name")
    if not entry["replays"]:
        raise NavzooError(f"{path} has no replays of the model: evaluate it saving at least one replay")
    return ModelEvaluation(path, split, entry, [_replay_path(path, name) for name in entry["replays"]])


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise NavzooError(
            f"{path} does not exist: give the output folder of an evaluation of this model (`navzoo eval`)"
        )
    size = path.stat().st_size
    if size > MAX_REPORT_BYTES:
        raise NavzooError(
            f"{path} is {size:,} bytes, more than the {MAX_REPORT_BYTES >> 20} MiB a `navzoo eval` report "
            "takes: give the output folder of `navzoo eval`, or leave the evaluation folder unset to "
            "evaluate the model here"
        )
    try:
        report = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise _malformed(path, f"it is not JSON ({reason})") from None
    if not isinstance(report, dict):
        raise _malformed(path, f"it holds a {type(report).__name__}, not a report")
    return report


def _check_summary(path: Path, summary: dict[str, Any], task: str) -> None:
    """The summary numbers the card and the commit message print."""
    for key in ("episodes", *(metric for metric, _ in get_task(task).metrics)):
        if not _is_number(summary.get(key)):
            raise _malformed(path, f"the model's summary has no number {key!r}")
        interval = summary.get(f"{key}_ci95")
        bounds = interval if isinstance(interval, list) and len(interval) == 2 else [interval]
        if interval is not None and not all(_is_number(b) for b in bounds):
            raise _malformed(path, f"the model's summary has a malformed {key}_ci95")
    rows = summary.get("by_distance") or []
    if not isinstance(rows, list) or not all(_distance_row(row) for row in rows):
        raise _malformed(path, "the model's summary has a malformed by_distance table")


def _distance_row(row: object) -> bool:
    if not isinstance(row, dict):
        return False
    top = row.get("max_geodesic")
    return all(_is_number(row.get(key)) for key in DISTANCE_FIELDS) and (top is None or _is_number(top))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _replay_path(path: Path, name: object) -> Path:
    """A replay the report names, which must lie inside the report's folder."""
    folder = path.parent.resolve()
    replay = (folder / name).resolve() if isinstance(name, str) and name else None
    if replay is None or not replay.is_relative_to(folder):
        raise _malformed(path, f"it names a replay {name!r} outside its folder")
    return replay


def _malformed(path: Path, problem: str) -> NavzooError:
    return NavzooError(
        f"{path} is not a `navzoo eval` report: {problem}. Evaluate the model again with `navzoo eval`, or "
        "leave the evaluation folder unset to evaluate it here"
    )
