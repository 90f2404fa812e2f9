"""The evaluation table of navzoo's shipped PointGoal agents, in the layout of DD-PPO's Table 2.

    python benchmarks/zoo_eval.py                        # 300 episodes of val and of test
    python benchmarks/zoo_eval.py --episodes 96 --runs runs/depth runs/rgb runs/blind
    python benchmarks/zoo_eval.py --only navzoo-pointnav-depth   # re-evaluate one agent, keep the others

Evaluates the baselines (random, forward-only, goal-follower, oracle, map-planner) and every packaged
`navzoo-pointnav-*` agent on the same fixed episodes of the val and test splits, actions sampled from the
policy as habitat-baselines evaluates. Prints a Markdown table (Success and SPL with 95% confidence
intervals and the episode count) and writes to --out: zoo_eval.json, spl_by_distance-val.png (DD-PPO
Fig. 13), and with --runs, learning_curves.png from the training runs' log.jsonl.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from matplotlib.figure import Figure
from report import markdown_table

import navzoo
from navzoo.agents.baselines import BASELINES, make_baseline
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.evaluation import evaluate, format_estimate, plot_by_distance, summarize
from navzoo.sim import BatchSim, SimConfig
from navzoo.train.logger import read_log

SPLITS = ("val", "test")
BASELINE_SIM = {"sensors": ("depth",), "resolution": (64, 64)}  # the map-planner maps depth; others read none


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=300, help="episodes per split (default 300)")
    parser.add_argument("--num-envs", type=int, default=50)
    parser.add_argument("--runs", nargs="*", default=[], help="training run folders for the learning curves")
    parser.add_argument("--out", default="benchmarks/results/zoo", help="output folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="evaluate these agents and take the others from --out's zoo_eval.json",
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    # each model is loaded once; a baseline has no policy
    agents = {name: None for name in BASELINES}
    agents |= {
        name: navzoo.load(name, local_files_only=True) for name in navzoo.list_models("navzoo-pointnav-*")
    }
    results: dict[str, dict[str, dict]] = {split: {} for split in SPLITS}
    if args.only is not None:
        results = _earlier_results(out / "zoo_eval.json", args.episodes)
    for split in SPLITS:
        for name, policy in agents.items():
            if args.only is not None and name not in args.only:
                continue
            results[split][name] = _evaluate(name, policy, split, args)
            spl, success = (format_estimate(results[split][name], key) for key in ("spl", "success"))
            print(f"{split:>4} {name:<24} SPL {spl}  success {success}")
    (out / "zoo_eval.json").write_text(json.dumps({"episodes": args.episodes, "results": results}, indent=2))
    plot_by_distance(results["val"], out / "spl_by_distance-val.png")
    if args.runs:
        plot_learning_curves([Path(r) for r in args.runs], out / "learning_curves.png")
    print()
    print(table2(results, {name: _sensors(name, policy) for name, policy in agents.items()}))


def _earlier_results(path: Path, episodes: int) -> dict[str, dict[str, dict]]:
    earlier = json.loads(path.read_text()) if path.exists() else {}
    if earlier.get("episodes") != episodes:
        raise SystemExit(f"--only needs {path} from a run with --episodes {episodes}")
    return earlier["results"]


def _evaluate(name: str, policy, split: str, args) -> dict:
    settings = BASELINE_SIM if policy is None else sim_settings(policy.config)
    sim = BatchSim(SimConfig(split=split, num_envs=args.num_envs, seed=args.seed, **settings))
    try:
        agent = (
            make_baseline(name, sim, seed=args.seed)
            if policy is None
            else PolicyAgent(policy, sim.num_envs, seed=args.seed)
        )
        return summarize(evaluate(sim, agent, args.episodes, progress=False))
    finally:
        sim.close()


def _sensors(name: str, policy) -> str:
    if policy is None:
        return {"oracle": "map (shortest path)", "map-planner": "Depth+GPS+Compass (mapping)"}.get(
            name, "GPS+Compass"
        )
    visual = policy.config.visual_sensors
    return "+".join(s.upper() if s == "rgb" else s.capitalize() for s in visual) or "Blind"


def table2(results: dict[str, dict[str, dict]], sensors: dict[str, str]) -> str:
    """Markdown in DD-PPO Table 2's layout: one row per agent, val and test SPL and Success with 95% CIs."""
    rows = []
    for name in results["val"]:
        row = {"Agent": name, "Sensors": sensors[name]}
        for split in SPLITS:
            s = results[split][name]
            row[f"{split.capitalize()} SPL"] = format_estimate(s, "spl")
            row[f"{split.capitalize()} Success"] = format_estimate(s, "success")
        rows.append(row)
    episodes = {split: next(iter(by_agent.values()))["episodes"] for split, by_agent in results.items()}
    note = (
        f"{episodes['val']} val and {episodes['test']} test episodes; 95% confidence intervals: ± for SPL, "
        "[low, high] Wilson intervals for success."
    )
    return markdown_table([(header, header) for header in rows[0]], rows) + "\n\n" + note


def plot_learning_curves(runs: list[Path], path: Path) -> Path:
    """Training SPL and success against frames, one line per run."""
    figure = Figure(figsize=(11, 4), layout="constrained")
    for axes, key, title in zip(
        figure.subplots(1, 2), ("episode/spl", "episode/success"), ("SPL", "Success"), strict=True
    ):
        for run in runs:
            rows = [r for r in read_log(run) if r.get(key) is not None]
            axes.plot([r["frames"] / 1e6 for r in rows], [r[key] for r in rows], label=run.name)
        axes.set_xlabel("frames (millions)")
        axes.set_ylabel(f"{title} of training episodes")
        axes.set_ylim(0, 1)
        axes.grid(alpha=0.3)
        axes.legend()
    figure.savefig(path, dpi=110)
    return path


if __name__ == "__main__":
    main()
