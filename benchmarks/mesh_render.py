"""Scanned-mesh scenes on the CPU: the mesh renderer (navzoo.sim.scans.raycast, Embree) on a ~500k-triangle
room next to navzoo's grid renderer (BatchSim on a procedural scene), at the same resolution and number of
environments; then BatchSim stepping on that room as a scene mesh next to BatchSim on procedural scenes;
the room's navmesh build time and the memory one such scene takes.

    python benchmarks/mesh_render.py                   # 64 environments, 64x64
    python benchmarks/mesh_render.py --envs 256 --size 128

The room is 12 x 12 x 3 m with 40 boxes of furniture, every face subdivided until the mesh has about
500k triangles, a scan's order of size. Agents stand at random places with random yaws. Frames per second
count one camera image per environment per call (render rows) or per environment step (BatchSim rows,
with random moves and turns). Each row runs with 1 and 2 threads (torch.set_num_threads: the mesh renderer
splits its cameras over that many threads, the grid renderer's numba kernels use as many). JSON goes to
benchmarks/results/mesh_render.json.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
import torch
import trimesh
from report import machine_info, markdown_table, write_json

from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.scans.cache import cached_navmesh
from navzoo.sim.scans.raycast import MeshRenderer, PinholeCamera
from navzoo.sim.scans.stage import load_stage

TRIANGLES = 450_000  # subdivide until at least this many (each pass multiplies by 4)


def furnished_room(seed: int = 0) -> trimesh.Trimesh:
    rng = np.random.default_rng(seed)
    room = trimesh.creation.box((12.0, 3.0, 12.0), trimesh.transformations.translation_matrix((0, 1.5, 0)))
    room.invert()  # walls face inward
    parts = [room]
    for _ in range(40):
        size = rng.uniform(0.3, 1.2, 3)
        centre = (*rng.uniform(-5.5, 5.5, 1), size[1] / 2, *rng.uniform(-5.5, 5.5, 1))
        parts.append(trimesh.creation.box(size, trimesh.transformations.translation_matrix(centre)))
    mesh = trimesh.util.concatenate(parts)
    vertices, faces = mesh.vertices, mesh.faces
    while len(faces) < TRIANGLES:
        vertices, faces = trimesh.remesh.subdivide(vertices, faces)
    return trimesh.Trimesh(vertices, faces, process=False)


def timing(render: Callable[[], object], envs: int, seconds: float) -> dict[str, float]:
    """Frames/s, wall ms and CPU ms (all threads) per call of `render`, called repeatedly for about
    `seconds` after one warm-up call. On a shared machine CPU time shows the work when wall time is noisy."""
    render()
    calls, started, cpu_started = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - started < seconds or calls < 3:
        render()
        calls += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "frames/s": calls * envs / elapsed,
        "ms/call": elapsed / calls * 1e3,
        "CPU ms/call": cpu / calls * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--size", type=int, default=64, help="square image size (default 64)")
    parser.add_argument("--seconds", type=float, default=5.0, help="timing per row (default 5)")
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    n, size = args.envs, args.size
    mesh = furnished_room()
    with tempfile.TemporaryDirectory() as folder:
        mesh_path = write_stage(mesh, Path(folder))
        scene = scene_cost(mesh_path)
        rows = render_rows(mesh, n, size, args.seconds) + step_rows(mesh_path, n, size, args.seconds)
    for kind in ("render", "step"):
        grid_one_thread = next(
            r for r in rows if r["kind"] == kind and r["threads"] == 1 and r["renderer"].startswith("grid")
        )
        for row in rows:
            if row["kind"] == kind:
                row["vs grid, 1 thread"] = row["frames/s"] / grid_one_thread["frames/s"]
    columns = [(key, key) for key in rows[0]]
    print(f"{n} environments, {size}x{size}; {len(mesh.faces):,} triangles")
    print(markdown_table(columns, rows))
    print(json.dumps(scene, indent=2))
    results = {"envs": n, "size": size, "triangles": len(mesh.faces), "scenes": {"room": scene}, "rows": rows}
    print("wrote", write_json("mesh_render", machine_info(), results))


def write_stage(mesh: trimesh.Trimesh, folder: Path) -> Path:
    """The room as a .glb with a stage config beside it saying it is y-up (a bare .glb is taken as z-up)."""
    path = folder / "room.glb"
    mesh.export(path)
    frame = {"up": [0, 1, 0], "front": [0, 0, -1]}
    (folder / "room.stage_config.json").write_text(json.dumps(frame))
    return path


def scene_cost(mesh_path: Path) -> dict[str, float]:
    """Seconds to load the mesh, build its Embree scene and its navmesh (and to read the navmesh back from
    the cache), the navmesh's seconds per 100 m² of navigable floor, and the memory the loaded scene holds:
    the resident memory the mesh and Embree's BVH add, plus the navmesh's arrays. (The navmesh build's
    temporaries are freed but stay in the process's heap, so resident memory would overstate it.)"""
    rss_before = resident_bytes()
    started = time.perf_counter()
    stage = load_stage(mesh_path)
    loaded = time.perf_counter()
    renderer = MeshRenderer(stage.vertices, stage.faces, PinholeCamera(64, 64))
    renderer.render(np.zeros((1, 3)), np.zeros(1), ("depth",))  # Embree builds its BVH on first use
    embree = time.perf_counter()
    mesh_bytes = resident_bytes() - rss_before
    with tempfile.TemporaryDirectory() as cache:
        navmesh = cached_navmesh(stage, None, Path(cache))
        built = time.perf_counter()
        cached_navmesh(stage, None, Path(cache))
        reread = time.perf_counter()
    navmesh_bytes = sum(a.nbytes for a in navmesh.arrays().values()) + navmesh.geodesics.nbytes
    floor_m2 = navmesh.size * navmesh.cell**2
    return {
        "load_s": loaded - started,
        "embree_build_s": embree - loaded,
        "navmesh_build_s": built - embree,
        "navmesh_cached_s": reread - built,
        "navigable_floor_m2": floor_m2,
        "navmesh_s_per_100m2": (built - embree) / floor_m2 * 100,
        "mesh_and_bvh_mb": mesh_bytes / 1e6,
        "navmesh_mb": navmesh_bytes / 1e6,
        "scene_memory_mb": (mesh_bytes + navmesh_bytes) / 1e6,
    }


def resident_bytes() -> int:
    """This process's resident set size (VmRSS), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def set_threads(threads: int) -> None:
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # pyright: ignore[reportAttributeAccessIssue]
    torch.set_num_threads(threads)


def render_rows(mesh: trimesh.Trimesh, n: int, size: int, seconds: float) -> list[dict]:
    """Camera images alone: the mesh renderer at random poses in the room, the grid renderer's observe()."""
    rows = []
    renderer = MeshRenderer(mesh.vertices, mesh.faces, PinholeCamera(size, size))
    rng = np.random.default_rng(1)
    positions = np.c_[rng.uniform(-5.5, 5.5, n), np.zeros(n), rng.uniform(-5.5, 5.5, n)]
    yaws = rng.uniform(-math.pi, math.pi, n)
    sim = BatchSim(SimConfig(split="val", num_envs=n, resolution=(size, size), sensors=("depth",), seed=0))
    sim.reset()
    for threads in (1, 2):
        set_threads(threads)
        for sensors in (("depth",), ("depth", "rgb")):
            times = timing(lambda s=sensors: renderer.render(positions, yaws, s), n, seconds)
            rows.append(
                row(
                    "render", "mesh (Embree)", f"room, {len(mesh.faces):,} triangles", sensors, threads, times
                )
            )
        times = timing(sim.observe, n, seconds)
        rows.append(row("render", "grid (numba)", "procedural val scenes", ("depth",), threads, times))
    sim.close()
    return rows


def step_rows(mesh_path: Path, n: int, size: int, seconds: float) -> list[dict]:
    """Whole BatchSim steps with random actions: on the room as a scene mesh (training episodes sampled on
    its navmesh) and on navzoo's procedural training scenes."""
    rows = []
    common = {"num_envs": n, "resolution": (size, size), "sensors": ("depth",), "seed": 0}
    sims = {
        ("mesh (Embree)", "room as a scene mesh"): SimConfig(
            split="train", scenes_dir=str(mesh_path.parent), **common
        ),
        ("grid (numba)", "procedural train scenes"): SimConfig(split="train", **common),
    }
    for (renderer, scene), config in sims.items():
        sim = BatchSim(config)
        sim.reset()
        for threads in (1, 2):
            set_threads(threads)
            times = timing(random_steps(sim, n), n, seconds)
            rows.append(row("step", renderer, scene, ("depth",), threads, times))
        sim.close()
    return rows


def random_steps(sim: BatchSim, n: int) -> Callable[[], object]:
    """Steps with random moves and turns. STOP is left out: drawn a quarter of the time it would end an
    episode every fourth step, where a trained agent's last hundreds, and the rows would time the drawing
    of new episodes (a Dijkstra field per episode on a mesh) rather than stepping."""
    generator = torch.Generator().manual_seed(0)
    return lambda: sim.step(torch.randint(1, 4, (n,), generator=generator))


def row(kind: str, renderer: str, scene: str, sensors: tuple[str, ...], threads: int, times: dict) -> dict:
    return {
        "kind": kind,
        "renderer": renderer,
        "scene": scene,
        "sensors": "+".join(sensors),
        "threads": threads,
        **times,
    }


if __name__ == "__main__":
    main()
