"""Learning efficiency of the depth recipes: the frames and wall-clock hours until a run's val SPL first
reaches a level, read from the learning curves' checkpoints (benchmarks/learning_curves.py: 96 val
episodes each, actions sampled; a checkpoint's interval is about ±0.05, so a crossing is located to a
checkpoint or two).

    python benchmarks/learning_efficiency.py

The recipes, each one run (two CPU workers of one thread unless said otherwise):
- RL only: DD-PPO from scratch (`runs/rl-bf16`), and on one H100 (`runs/gpu-rl`);
- imitation only: DAgger of the map-planner (`runs/il-mp-bf16`);
- imitation then RL: the shipped recipe (`runs/depth-ks01`, whose curve starts at its third stage);
- the same in habitat's PointNavBaselineNet layout (`runs/depth-baseline-il`).

Writes benchmarks/results/learning_efficiency.json and learning_efficiency.png (val SPL against hours, with
the levels dashed).
"""

from __future__ import annotations

import json

from matplotlib.figure import Figure
from report import RESULTS

LEVELS = (0.80, 0.85, 0.90)
# recipe: (curves file under results/, run key, device)
RECIPES = {
    "RL only": ("learning/learning_curves.json", "runs/rl-bf16", "CPU"),
    "RL only, one H100": ("learning/learning_curves.json", "runs/gpu-rl", "GPU"),
    "imitation only": ("learning/learning_curves.json", "runs/il-mp-bf16", "CPU"),
    "imitation then RL (shipped)": ("learning/learning_curves.json", "runs/depth-ks01", "CPU"),
    "imitation then RL, habitat's baseline layout": (
        "learning-baseline-net/learning_curves.json",
        "runs/depth-baseline-il",
        "CPU",
    ),
}


def main() -> None:
    rows, curves = [], {}
    for recipe, (file, run, device) in RECIPES.items():
        points = sorted(json.loads((RESULTS / file).read_text())[run].values(), key=lambda p: p["frames"])
        curves[recipe] = points
        best = max(points, key=lambda p: p["spl"])
        row = {"recipe": recipe, "run": run, "device": device, "evaluated_from_frames": points[0]["frames"]}
        row |= {"best_spl": best["spl"], "best_frames": best["frames"], "best_hours": best["hours"]}
        row |= {"last_frames_m": points[-1]["frames"] / 1e6, "last_hours": points[-1]["hours"]}
        for level in LEVELS:
            reached = next((p for p in points if p["spl"] >= level), None)
            row[f"frames_to_{level:.2f}"] = reached and reached["frames"]
            row[f"hours_to_{level:.2f}"] = reached and reached["hours"]
            row[f"to_{round(level * 100)}"] = _reached_text(reached, reached is points[0])
        rows.append(row)
        print(row)
    out = RESULTS / "learning_efficiency.json"
    out.write_text(json.dumps({"levels": LEVELS, "results": rows}, indent=2) + "\n")
    figure = Figure(figsize=(7, 4), layout="constrained")
    axes = figure.add_subplot()
    for recipe, points in curves.items():
        axes.plot([p["hours"] for p in points], [p["spl"] for p in points], marker=".", label=recipe)
    for level in LEVELS:
        axes.axhline(level, color="grey", linestyle="--", linewidth=0.8)
    axes.set(xlabel="wall-clock hours", ylabel="val SPL (96 episodes)", ylim=(0, 1))
    axes.legend(fontsize="small", loc="lower right")
    figure.savefig(RESULTS / "learning_efficiency.png", dpi=120)
    print(f"wrote {out} and learning_efficiency.png")


def _reached_text(point: dict | None, first: bool) -> str:
    """The table's cell: where the level was first reached, at most there when the curve starts above it."""
    if point is None:
        return "not reached"
    at_most = "≤ " if first else ""
    return f"{at_most}{point['frames'] / 1e6:.1f}M frames, {at_most}{point['hours']:.2f} h"


if __name__ == "__main__":
    main()
