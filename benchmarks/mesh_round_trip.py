"""The mesh round trip: navzoo's own val scenes exported as habitat scene meshes and episodes
(navzoo.interop.habitat_scenes), run through BatchSim's scanned-scene source (SimConfig.scenes_dir), and each
shipped PointGoal agent's Success and SPL there paired with the native simulator's on the same episodes.

    python benchmarks/mesh_round_trip.py                  # 96 val episodes of apartment-s scenes
    python benchmarks/mesh_round_trip.py --episodes 32 --models navzoo-pointnav-depth --out /tmp/rt.json

Writes benchmarks/results/mesh_round_trip.json: per agent and simulator, Success, SPL and the mean start
geodesic (`rows`), the paired differences per agent (`paired`), and the start geodesics' ratio, mesh over
native. Navmesh builds are cached (NAVZOO_NAVMESH_CACHE, else HF_HOME/navzoo/navmeshes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import navzoo
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.evaluation import evaluate
from navzoo.interop.habitat_scenes import CONFIG_NAME, export_scenes
from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.episodes import mesh_path
from navzoo.sim.scans.cache import cached_navmesh
from navzoo.sim.scans.mesh_scenes import navmesh_cache_dir, on_floor
from navzoo.sim.scans.stage import load_stage

MODELS = ("navzoo-pointnav-depth", "navzoo-pointnav-rgb", "navzoo-pointnav-blind")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=96)
    parser.add_argument("--family", default="apartment-s")
    parser.add_argument("--scenes", type=int, default=4, help="val scenes of the family exported")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "mesh_round_trip.json"))
    args = parser.parse_args()

    report = {"family": args.family, "scenes": args.scenes, "episodes": args.episodes}
    report |= {"rows": [], "paired": []}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        per_scene = -(-2 * args.episodes // args.scenes)  # twice as many: some starts are off the navmesh
        export_scenes(out, "val", (args.family,), count=args.scenes, episodes_per_scene=per_scene)
        scenes = out / "scene_datasets"
        dataset = scenes / "navzoo" / CONFIG_NAME
        episodes_file = out / "datasets" / "pointnav" / "navzoo" / "v1" / "val" / "val.json.gz"
        report["episodes_exported"] = _keep_on_navmesh(episodes_file, scenes, dataset, args.episodes)
        sources = {"native": {}, "mesh": dict(scenes_dir=str(scenes), scene_dataset=str(dataset))}
        for model in args.models:
            policy = navzoo.load(model, local_files_only=True)
            metrics = {}
            for name, extra in sources.items():
                started = time.perf_counter()
                config = SimConfig(
                    split="val",
                    episodes_file=str(episodes_file),
                    num_envs=args.num_envs,
                    seed=args.seed,
                    **sim_settings(policy.config),
                    **extra,
                )
                sim = BatchSim(config)
                results = evaluate(sim, PolicyAgent(policy, sim.num_envs, seed=args.seed), args.episodes)
                sim.close()
                metrics[name] = {
                    key: np.array([getattr(r, key) for r in results], float)
                    for key in ("success", "spl", "geodesic_distance", "collisions")
                }
                row = {"model": model, "simulator": name}
                row |= {key: float(v.mean()) for key, v in metrics[name].items()}
                row["seconds"] = time.perf_counter() - started
                report["rows"].append(row)
                print(row, flush=True)
            report["paired"].append({"model": model} | _paired(metrics))
    ratio = metrics["mesh"]["geodesic_distance"] / metrics["native"]["geodesic_distance"]
    report["start_geodesic_ratio"] = {
        "median": float(np.median(ratio)),
        "mean": float(ratio.mean()),
        "max": float(ratio.max()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


def _paired(metrics: dict) -> dict:
    """Mesh minus native per episode, for Success and SPL: the mean and its 95% interval's half-width."""
    paired = {}
    for key in ("success", "spl"):
        difference = metrics["mesh"][key] - metrics["native"][key]
        paired[f"{key}_difference"] = float(difference.mean())
        paired[f"{key}_ci95_half_width"] = float(1.96 * difference.std(ddof=1) / np.sqrt(len(difference)))
    return paired


def _keep_on_navmesh(episodes_file: Path, scenes: Path, dataset: Path, count: int) -> int:
    """Rewrite the episodes file with its first `count` episodes whose start and goal are on the scans
    navmesh (habitat's 0.15 m wall clearance and 1 m² minimum region drop some native starts); returns how
    many there were."""
    with gzip.open(episodes_file, "rt") as f:
        data = json.load(f)
    navmeshes, kept = {}, []
    for episode in data["episodes"]:
        path = mesh_path(episode["scene_id"], str(scenes))
        if path not in navmeshes:
            navmeshes[path] = cached_navmesh(load_stage(path, dataset), None, navmesh_cache_dir())
        points = [episode["start_position"]] + [g["position"] for g in episode["goals"]]
        if all(on_floor(navmeshes[path], p) for p in points):
            kept.append(episode)
    total, data["episodes"] = len(data["episodes"]), kept[:count]
    with gzip.open(episodes_file, "wt") as f:
        json.dump(data, f)
    return total


if __name__ == "__main__":
    main()
