"""`navzoo eval`: Success / SPL of agents on a split's fixed episodes, a table, JSON and top-down maps."""

import json
from pathlib import Path

from navzoo.baselines import BASELINES, make_baseline
from navzoo.evaluation import episode_map, evaluate, format_table, summarize
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim_cli import add_sim_arguments, sim_config_from_args
from navzoo.topdown import save_png


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate agents on PointGoal episodes",
        description="Evaluate agents on the fixed PointGoal episodes of a split: "
        "prints Success and SPL with 95%% confidence intervals, writes "
        "eval.json and a top-down map of one episode per agent.",
    )
    parser.add_argument(
        "agents",
        nargs="*",
        default=list(BASELINES),
        help=f"agents to evaluate: {', '.join(BASELINES)} (default: all of them)",
    )
    parser.add_argument("--episodes", type=int, default=96, help="number of episodes (default 96)")
    parser.add_argument("--out", default="runs/eval", help="output folder (default runs/eval)")
    parser.add_argument("--map-episode", type=int, default=0, help="episode drawn on the maps (default 0)")
    add_sim_arguments(parser)
    parser.set_defaults(run=_run)


def _run(args) -> None:
    config = sim_config_from_args(args)
    sim = BatchSim(config)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summaries, report = {}, {"config": {k: v for k, v in vars(args).items() if k != "run"}, "agents": {}}
    for name in args.agents:
        agent = make_baseline(name, sim, seed=args.seed)
        results = evaluate(sim, agent, args.episodes)
        summaries[name] = summarize(results)
        report["agents"][name] = {"summary": summaries[name], "episodes": [r.metrics() for r in results]}
        shown = results[min(args.map_episode, len(results) - 1)]
        save_png(episode_map(sim, shown), out / f"map-{name}.png")
    sim.close()
    (out / "eval.json").write_text(json.dumps(report, indent=2))
    print(
        f"PointGoal, split {config.split}, {args.episodes} episodes, {config.resolution[0]}x"
        f"{config.resolution[1]} {'+'.join(config.sensors) or 'blind'}"
    )
    print(format_table(summaries))
    print(f"\nwrote {out / 'eval.json'} and maps {out}/map-<agent>.png (episode {args.map_episode})")
