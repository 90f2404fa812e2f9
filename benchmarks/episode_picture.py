"""The README's picture: the shipped depth agent on navzoo's val episodes, one episode drawn top-down.

    python benchmarks/episode_picture.py                 # the first 32 val episodes, seed 0
    python benchmarks/episode_picture.py --episodes 96

Evaluates `navzoo-pointnav-depth` (actions sampled from the policy, as habitat-baselines evaluates) and draws
the successful episode with the longest shortest path: the scene, the shortest path (green), the agent's
trajectory (dark to bright with time), start and goal. Writes benchmarks/results/zoo/episode_map-val.png
and, beside it, episode_map-val.json with the episode drawn and its metrics.
"""

from __future__ import annotations

import argparse

from report import RESULTS, machine_info, write_json

import navzoo
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.evaluation import episode_map, evaluate
from navzoo.evaluation.topdown import save_png
from navzoo.sim import BatchSim, SimConfig

MODEL = "navzoo-pointnav-depth"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32, help="val episodes evaluated (default 32)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    policy = navzoo.load(MODEL, local_files_only=True)
    sim = BatchSim(SimConfig(split="val", num_envs=16, seed=args.seed, **sim_settings(policy.config)))
    results = evaluate(sim, PolicyAgent(policy, sim.num_envs, seed=args.seed), args.episodes)
    succeeded = [r for r in results if r.success]
    if not succeeded:
        raise SystemExit(f"{MODEL} succeeded in none of the {args.episodes} episodes: nothing to draw")
    drawn = max(succeeded, key=lambda r: r.geodesic_distance)
    picture = save_png(episode_map(sim, drawn, cell_pixels=10), RESULTS / "zoo" / "episode_map-val.png")
    sim.close()
    record = {
        "model": MODEL,
        "episodes_evaluated": args.episodes,
        "seed": args.seed,
        "episode_index": drawn.episode_index,
        "scene": drawn.scene_id,
        **{key: drawn.metrics()[key] for key in ("success", "spl", "geodesic_distance", "path_length")},
    }
    print("wrote", picture, "and", write_json("zoo/episode_map-val", machine_info(), record))


if __name__ == "__main__":
    main()
