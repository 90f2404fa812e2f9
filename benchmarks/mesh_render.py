"""The mesh renderer (navzoo.sim.scans.raycast, Embree) on a ~500k-triangle room, next to navzoo's grid
renderer (BatchSim on a procedural scene), at the same resolution and number of environments.

    python benchmarks/mesh_render.py                   # 64 environments, 64x64
    python benchmarks/mesh_render.py --envs 256 --size 128

The room is 12 x 12 x 3 m with 40 boxes of furniture, every face subdivided until the mesh has about
500k triangles, a scan's order of size. Agents stand at random places with random yaws. Frames per second
count one camera image per environment per call. The grid renderer runs with 1 and 2 numba threads; the
mesh renderer casts on one thread whatever the setting (embreex's loop holds the GIL). JSON goes to
benchmarks/results/mesh_render.json.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numba
import numpy as np
import torch
import trimesh
from report import machine_info, markdown_table, write_json

from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.scans.raycast import MeshRenderer, PinholeCamera

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
    rows = []

    mesh = furnished_room()
    started = time.perf_counter()
    renderer = MeshRenderer(mesh.vertices, mesh.faces, PinholeCamera(size, size))
    build_s = time.perf_counter() - started
    rng = np.random.default_rng(1)
    positions = np.c_[rng.uniform(-5.5, 5.5, n), np.zeros(n), rng.uniform(-5.5, 5.5, n)]
    yaws = rng.uniform(-math.pi, math.pi, n)
    for sensors in (("depth",), ("depth", "rgb")):
        times = timing(lambda s=sensors: renderer.render(positions, yaws, s), n, args.seconds)
        rows.append(
            {
                "renderer": "mesh (Embree, embreex)",
                "scene": f"room, {len(mesh.faces):,} triangles",
                "sensors": "+".join(sensors),
                "threads": 1,
                **times,
            }
        )

    sim = BatchSim(SimConfig(split="val", num_envs=n, resolution=(size, size), sensors=("depth",), seed=0))
    sim.reset()
    for threads in (1, 2):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        torch.set_num_threads(threads)
        times = timing(sim.observe, n, args.seconds)
        rows.append(
            {
                "renderer": "grid (BatchSim, numba)",
                "scene": "procedural val scenes",
                "sensors": "depth",
                "threads": threads,
                **times,
            }
        )
    sim.close()

    grid_one_thread = rows[2]["frames/s"]
    for row in rows:
        row["vs grid, 1 thread"] = row["frames/s"] / grid_one_thread
    columns = [(key, key) for key in rows[0]]
    print(f"{n} environments, {size}x{size}; Embree scene built in {build_s:.2f} s")
    print(markdown_table(columns, rows))
    results = {"envs": n, "size": size, "triangles": len(mesh.faces), "embree_build_s": build_s, "rows": rows}
    print("wrote", write_json("mesh_render", machine_info(), results))


if __name__ == "__main__":
    main()
