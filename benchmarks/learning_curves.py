"""Val SPL of training runs against frames and against wall-clock, from their kept checkpoints.

    python benchmarks/learning_curves.py runs/depth-rl runs/depth-il runs/depth-il-rl --episodes 96

Every checkpoint of every run (train with `keep_checkpoints` high enough to keep them; --stride N takes every
N-th and the last) is evaluated on the first --episodes val episodes with actions sampled from the policy,
as habitat-baselines evaluates. A run started with `init_from` continues the curve of the run it started
from: its frames and wall time count from where that one stopped (and that one's from where its own source
stopped), and runs given the same --labels entry make one curve (a run continued in another folder).
Results are cached in --out/learning_curves.json, so a second call only evaluates new checkpoints; the
figure, learning_curves.png, has SPL against frames and against hours.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
from cycler import cycler
from matplotlib.figure import Figure

from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.evaluation import evaluate, summarize
from navzoo.models import build_policy
from navzoo.models.metadata import training_records
from navzoo.sim import BatchSim, SimConfig
from navzoo.train.checkpoint import list_checkpoints, load_checkpoint
from navzoo.train.config import TrainConfig


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path, help="navzoo train run folders")
    parser.add_argument("--labels", nargs="*", help="a legend label per run (default: folder names)")
    parser.add_argument("--episodes", type=int, default=96, help="val episodes per checkpoint (default 96)")
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument(
        "--stride", type=int, default=1, help="evaluate every STRIDE-th checkpoint of a run, and its last"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/learning"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cache_path = args.out / "learning_curves.json"
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    labels = args.labels or [run.name for run in args.runs]
    curves = {}
    for run, label in zip(args.runs, labels, strict=True):
        points = cache.setdefault(str(run), {})
        checkpoints = list_checkpoints(run)
        for path in dict.fromkeys([*checkpoints[args.stride - 1 :: args.stride], *checkpoints[-1:]]):
            if path.name not in points or points[path.name]["episodes"] != args.episodes:
                points[path.name] = evaluate_checkpoint(path, args.episodes, args.num_envs)
                save_cache(cache, cache_path)
                p = points[path.name]
                print(f"{label:<20} {p['frames']:>10,} frames {p['hours']:6.2f} h  SPL {p['spl']:.3f}")
        curves.setdefault(label, []).extend(points.values())
    save_cache(cache, cache_path)
    plot(curves, args.episodes, args.out / "learning_curves.png")


def save_cache(cache: dict[str, dict[str, dict]], path: Path) -> None:
    """Write the results with each run's checkpoints in name order, whatever strides evaluated them: the
    results pages read a run's last checkpoint as its last entry (`runs/x[-1]`)."""
    ordered = {run: dict(sorted(points.items())) for run, points in cache.items()}
    path.write_text(json.dumps(ordered, indent=1))


def evaluate_checkpoint(path: Path, episodes: int, num_envs: int) -> dict:
    state = load_checkpoint(path)
    # Only the architecture matters here: a run trained on CUDA is evaluated on this machine's CPU.
    trained = state["config"]
    config = TrainConfig.from_dict(
        {**trained, "device": "cpu", "sim": {**trained["sim"], "device": "cpu", "compile": False}}
    )
    policy = build_policy(config.policy_config())
    policy.load_state_dict(state["model"])
    sim = BatchSim(SimConfig(split="val", num_envs=num_envs, **sim_settings(policy.config)))
    try:
        summary = summarize(evaluate(sim, PolicyAgent(policy, num_envs), episodes, progress=False))
    finally:
        sim.close()
    # A run initialised from another continues the frames and time of every run before it.
    before = training_records(state.get("initialised_from"))
    counters = state["counters"]
    return {
        "frames": counters["frames"] + sum(record.get("frames") or 0 for record in before),
        "hours": (counters["elapsed_s"] + sum(record.get("wall_time_s") or 0 for record in before)) / 3600,
        "spl": summary["spl"],
        "spl_ci95": summary["spl_ci95"],
        "success": summary["success"],
        "episodes": episodes,
    }


def plot(curves: dict[str, list[dict]], episodes: int, path: Path) -> Path:
    figure = Figure(figsize=(11, 4 + 0.17 * len(curves)), layout="constrained")
    by_frames, by_hours = figure.subplots(1, 2, sharey=True)
    # Ten colours, solid then dashed, so that up to twenty curves stay apart.
    styles = cycler(linestyle=["-", "--"]) * cycler(color=matplotlib.colormaps["tab10"].colors)
    for axes in (by_frames, by_hours):
        axes.set_prop_cycle(styles)
    for label, points in curves.items():
        points = sorted(points, key=lambda p: p["frames"])
        spl = [p["spl"] for p in points]
        by_frames.plot([p["frames"] / 1e6 for p in points], spl, marker=".", label=label)
        by_hours.plot([p["hours"] for p in points], spl, marker=".")
    by_frames.set_xlabel("frames (millions)")
    by_hours.set_xlabel("wall-clock (hours)")
    by_frames.set_ylabel(f"val SPL ({episodes} episodes, sampled actions)")
    for axes in (by_frames, by_hours):
        axes.set_ylim(0, 1)
        axes.grid(alpha=0.3)
    # One legend for both panels, under them, so that it hides no curve.
    figure.legend(loc="outside lower center", ncols=2, fontsize="small")
    figure.savefig(path, dpi=110)
    return path


if __name__ == "__main__":
    main()
