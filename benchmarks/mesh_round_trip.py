"""The mesh round trip: navzoo's own val scenes exported as habitat scene meshes and episodes
(navzoo.interop.habitat_scenes), read back through BatchSim's scanned-scene source (SimConfig.scenes_dir),
against the native simulator on the same scenes and episodes:

- depth at the same poses (the episodes' starts, then the poses of random walks): pixels within 1 cm;
- navigability of the native grid's cells: the navmesh's floor under each cell centre, or none;
- the episodes' start geodesics, mesh over native;
- each shipped PointGoal agent's Success and SPL, paired by episode.

    python benchmarks/mesh_round_trip.py                  # 96 val episodes of apartment-s scenes
    python benchmarks/mesh_round_trip.py --episodes 32 --models navzoo-pointnav-depth --out /tmp/rt.json

Writes benchmarks/results/mesh_round_trip.json: `depth`, `navigable`, `start_geodesic_ratio`, per agent and
simulator Success, SPL and the mean start geodesic (`rows`), and the paired differences per agent
(`paired`). Navmesh builds are cached (NAVZOO_NAVMESH_CACHE, else HF_HOME/navzoo/navmeshes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from scipy import ndimage

import navzoo
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.evaluation import evaluate
from navzoo.interop.habitat_scenes import CONFIG_NAME, DATASET, export_scenes
from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.episodes import mesh_path
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scans.cache import cached_navmesh
from navzoo.sim.scans.mesh_scenes import navmesh_cache_dir, on_floor
from navzoo.sim.scans.stage import load_stage
from navzoo.sim.scenes import generate_scene

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
        report["depth"] = _depth_agreement(episodes_file, sources, args.num_envs, args.seed)
        report["navigable"] = _navigable_agreement(scenes, dataset)
        print({key: report[key] for key in ("depth", "navigable")}, flush=True)
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
        "min": float(ratio.min()),
        "max": float(ratio.max()),
        "within_2_percent": float((np.abs(ratio - 1) <= 0.02).mean()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


def _depth_agreement(episodes_file: Path, sources: dict, num_envs: int, seed: int, steps: int = 30) -> dict:
    """128x128 depth of the mesh and the native simulator at the same poses: the episodes' starts, then
    after each of `steps` random moves of the mesh agent, with the native agent put where it stands."""
    config = dict(
        split="val",
        episodes_file=str(episodes_file),
        num_envs=num_envs,
        seed=seed,
        sensors=("depth",),
        resolution=(128, 128),
    )
    mesh, native = BatchSim(SimConfig(**config, **sources["mesh"])), BatchSim(SimConfig(**config))
    pairs = [(mesh.reset()["depth"], native.reset()["depth"])]
    moves = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        observations, *_ = mesh.step(torch.randint(1, 4, (num_envs,), generator=moves))  # no stop
        native.pos, native.heading = mesh.pos.clone(), mesh.heading.clone()
        pairs.append((observations["depth"], native.observe()["depth"]))
    ours, theirs = (torch.cat(images) for images in zip(*pairs, strict=True))
    error = (ours - theirs).abs() * (mesh.config.max_depth - mesh.config.min_depth)
    mesh.close()
    native.close()
    return {
        "pixels": int(error.numel()),
        "within_1cm": float((error < 0.01).float().mean()),
        "median_error_m": float(error.median()),
    }


def _navigable_agreement(scenes: Path, dataset: Path) -> dict:
    """Each exported scene's native navigation cells against its navmesh: a cell is navigable on the mesh
    when the navmesh's floor lies under its centre within 0.1 m of the ground (furniture tops are islands
    of their own). Agreement over all cells, and away from the native grid's free-space boundary, where two
    grids of 0.125 m and 0.05 m cells (a disc's erosion and Recast's chamfer) draw it up to a cell apart."""
    agree = away = cells = cells_away = 0
    for path in sorted((scenes / DATASET).rglob("*.glb")):
        navmesh = cached_navmesh(load_stage(path, dataset), None, navmesh_cache_dir())
        sid = path.relative_to(scenes / DATASET).with_suffix("").as_posix()  # family/split/index
        grid = NavGrid(generate_scene(sid), SimConfig.agent_radius)
        rows, cols = grid.shape
        xy = grid.cell_centres(np.arange(rows)[:, None], np.arange(cols)[None, :]).reshape(-1, 2)
        points = np.stack([xy[:, 0], np.zeros(len(xy)), -xy[:, 1]], 1)
        on_floor = (np.abs(navmesh.floor_height(points)) < 0.1).reshape(rows, cols)
        same = on_floor == grid.free
        boundary = ndimage.binary_dilation(grid.free, np.ones((3, 3))) & ~ndimage.binary_erosion(
            grid.free, np.ones((3, 3))
        )
        agree, cells = agree + int(same.sum()), cells + same.size
        away, cells_away = away + int(same[~boundary].sum()), cells_away + int((~boundary).sum())
    return {"cells": cells, "agree": agree / cells, "agree_away_from_boundaries": away / cells_away}


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
