"""navzoo's shipped PointGoal agents on the scanned meshes the tests build: two storeys joined by stairs, a
ramp, a holed floor, a slanted wall and a furnished room tessellated like a scan (tests/sim/scans/meshes.py).
The tests' stairs and ramp stand in the open; here they also get walls around them, since a camera ray that
meets nothing reads depth 0 (as in habitat), which no agent trained indoors has seen at eye level.

    python benchmarks/mesh_agents.py                     # 50 episodes per mesh
    python benchmarks/mesh_agents.py --episodes 8 --out /tmp/mesh_agents.json

Episodes are drawn on each mesh's navmesh by habitat-lab's PointNav generator rules
(navzoo.sim.scans.episode_sampler: one storey, geodesic 1-30 m), and on the two-storey mesh also from the
ground floor to the upper one, up the stairs. Each agent and the oracle (the shortest-path follower) runs
them with actions sampled as habitat evaluates. The meshes are untextured, so the RGB agent sees grey
surfaces it never trained on. Writes benchmarks/results/mesh_agents.json.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
from report import machine_info, markdown_table, write_json

import navzoo
from navzoo.agents.baselines import make_baseline
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.evaluation import evaluate, summarize
from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.scans.cache import cached_navmesh
from navzoo.sim.scans.episode_sampler import EpisodeSampler
from navzoo.sim.scans.mesh_scenes import navmesh_cache_dir
from navzoo.sim.scans.stage import load_stage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' mesh builders
from tests.sim.scans import meshes

AGENTS = ("navzoo-pointnav-depth", "navzoo-pointnav-rgb", "navzoo-pointnav-blind")
MESHES = {
    "two storeys, open": meshes.two_storeys,
    "two storeys": lambda: walled(meshes.two_storeys(), 10, 4, 4.5),
    "ramp (20°)": lambda: walled(meshes.ramp(20), 12, 3, 3.0),
    "holed floor": meshes.holed_floor,
    "slanted wall": meshes.leaning_room,
    "furnished room, scan tessellation": lambda: meshes.fine_room(8.0, 0.1),
}
UP_THE_STAIRS = "two storeys, ground to upper floor"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=50, help="episodes per row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        scenes = Path(folder)
        for name, build in MESHES.items():
            mesh_name = f"mesh{len(rows)}.ply"
            build_mesh = build()
            (build_mesh.mesh() if isinstance(build_mesh, meshes.Builder) else build_mesh).export(
                scenes / mesh_name
            )
            navmesh = cached_navmesh(load_stage(scenes / mesh_name), None, navmesh_cache_dir())
            rng = np.random.default_rng(args.seed)
            drawn = [EpisodeSampler(navmesh, mesh_name).sample(rng)[0] for _ in range(args.episodes)]
            sets = {name: [(e.start, e.yaw, e.goal) for e in drawn]}
            if name == "two storeys":
                sets[UP_THE_STAIRS] = up_the_stairs(navmesh, rng, args.episodes)
            for label, episodes in sets.items():
                file = meshes.write_episodes(scenes / f"{len(rows)}.json.gz", mesh_name, episodes)
                rows += evaluate_row(label, scenes, file, len(episodes), args.seed)
    print(markdown_table([(h, h) for h in ("mesh", "agent", "success", "spl", "episodes")], rows))
    print(f"wrote {write_json('mesh_agents', machine_info(), rows, args.out)}")


def walled(scene: meshes.Builder, x1: float, z1: float, height: float) -> meshes.Builder:
    """`scene` with walls facing in around x 0..x1, z 0..z1, from the floor up to `height`."""
    for corner, along, normal in (
        ((0, 0, 0), (x1, 0, 0), (0, 0, 1)),
        ((0, 0, z1), (x1, 0, 0), (0, 0, -1)),
        ((0, 0, 0), (0, 0, z1), (1, 0, 0)),
        ((x1, 0, 0), (0, 0, z1), (-1, 0, 0)),
    ):
        scene.quad(corner, along, (0, height, 0), normal)
    return scene


def up_the_stairs(navmesh, rng: np.random.Generator, count: int) -> list[tuple]:
    """Episodes from a random place of the ground floor to one of the upper floor, at random yaws."""
    positions = navmesh.positions
    ground = positions[positions[:, 1] < 0.5]
    upper = positions[positions[:, 1] > 1.5]
    return [
        (ground[rng.integers(len(ground))], rng.random() * 2 * math.pi, upper[rng.integers(len(upper))])
        for _ in range(count)
    ]


def evaluate_row(label: str, scenes: Path, episodes_file: Path, count: int, seed: int) -> list[dict]:
    """Success and SPL of each shipped agent and of the oracle on the episodes of one file."""
    rows = []
    common = dict(split="val", episodes_file=str(episodes_file), scenes_dir=str(scenes), seed=seed)
    for agent_name in (*AGENTS, "oracle"):
        if agent_name == "oracle":
            sim = BatchSim(SimConfig(num_envs=min(count, 16), sensors=(), **common))
            agent = make_baseline("oracle", sim, seed)
        else:
            policy = navzoo.load(agent_name, local_files_only=True)
            sim = BatchSim(SimConfig(num_envs=min(count, 16), **sim_settings(policy.config), **common))
            agent = PolicyAgent(policy, sim.num_envs, seed=seed)
        summary = summarize(evaluate(sim, agent, count, progress=False))
        sim.close()
        rows.append(
            {"mesh": label, "agent": agent_name.removeprefix("navzoo-pointnav-"), "model": agent_name}
            | {"success": summary["success"], "spl": summary["spl"]}
            | {"episodes": count, "success_ci95": summary["success_ci95"], "spl_ci95": summary["spl_ci95"]}
        )
        print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    main()
