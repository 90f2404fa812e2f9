"""`navzoo eval`: baselines and trained models on a split's fixed episodes of PointGoal (Success / SPL),
Flee (D_T) or Explore (visited cells), through navzoo.evaluation.run.

Prints a table (for PointGoal also by geodesic distance and, over two scene families or more, by family)
and writes to OUT: eval.json, a top-down map per agent (map-<agent>.png), replays of the first episodes
(replays/<agent>/episode-<index>.replay.json.gz, see navzoo.evaluation.replay) and for PointGoal
spl_by_distance.png (DD-PPO Fig. 13).
"""

from pathlib import Path

from navzoo.cli.options import add_sim_arguments, add_threads_option, resolution, resolve_device, set_threads
from navzoo.names import ACTION_MODES, BASELINES, GOAL_BASELINES, GOALLESS_BASELINES


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate baselines and trained models on PointGoal, Flee or Explore episodes",
        description="Evaluate agents on the fixed episodes of a split: prints the task's metrics with 95% "
        "confidence intervals (PointGoal: Success and SPL, also by geodesic distance and scene family; Flee: "
        "D_T; Explore: visited cells) and writes eval.json, a top-down map per agent, replays and for "
        "PointGoal spl_by_distance.png (DD-PPO Fig. 13). --task defaults to the task the first model was "
        "trained for (PointGoal for baselines). Models run with the sensors and resolution they were built "
        "for unless --sensors / --resolution say otherwise; baselines use 64x64 depth by default.",
    )
    parser.add_argument(
        "agents",
        nargs="*",
        help=f"baselines ({', '.join(BASELINES)}; {', '.join(GOAL_BASELINES)} need PointGoal's goal, "
        "map-planner needs depth), zoo names, model or training-run folders (config.json + "
        "model.safetensors), or hf-hub:org/name (default: navzoo's shipped depth agent and the baselines "
        f"but map-planner on PointGoal, {' and '.join(GOALLESS_BASELINES)} on Flee and Explore)",
    )
    parser.add_argument("--episodes", type=int, default=96, help="number of episodes (default 96)")
    parser.add_argument(
        "--mode",
        choices=ACTION_MODES,
        default="sampled",
        help="how models choose actions: sampled from the policy's distribution (default, as "
        "habitat-baselines' evaluation does) or its most likely action (deterministic)",
    )
    parser.add_argument(
        "--replays",
        type=int,
        default=3,
        help="save replays of the first K episodes of each agent under OUT/replays/<agent>/ (default 3)",
    )
    parser.add_argument("--out", default="runs/eval", help="output folder (default runs/eval)")
    parser.add_argument("--map-episode", type=int, default=0, help="episode drawn on the maps (default 0)")
    add_threads_option(parser, "torch threads (on a busy machine 1 is often faster)", "torch's own choice")
    add_sim_arguments(parser)
    # None marks "not given", so that models can bring their own task, sensors and resolution.
    parser.set_defaults(run=_run, task=None, sensors=None, resolution=None)


def _run(args) -> None:
    from navzoo.evaluation import format_distance_table, format_family_table, format_table, run
    from navzoo.tasks import get_task

    set_threads(args.threads)
    result = run(
        args.agents,
        task=args.task,
        split=args.split,
        episodes=args.episodes,
        mode=args.mode,
        out=args.out,
        replays=args.replays,
        map_episode=args.map_episode,
        sensors=tuple(args.sensors) if args.sensors is not None else None,
        resolution=resolution(args.resolution),
        num_envs=args.num_envs,
        families=tuple(args.scene_families),
        episodes_file=args.episodes_file,
        scenes_dir=args.scenes_dir,
        scene_dataset=args.scene_dataset,
        device=resolve_device(args.device),
        seed=args.seed,
    )
    print()
    print(format_table(result.summaries, result.task))
    if get_task(result.task).has_goal:
        print()
        print(format_distance_table(result.summaries))
        if families := format_family_table(result.summaries):
            print()
            print(families)
    out = Path(args.out)
    replays = f" and replays {out}/replays/<agent>/" if args.replays else ""
    print(
        f"\nwrote {', '.join(map(str, result.files))}, maps {out}/map-<agent>.png (episode "
        f"{args.map_episode}){replays}"
    )
