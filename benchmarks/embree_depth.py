"""navzoo's renderer against Intel Embree on the exported meshes of every val scene, and the export's cost.

    pip install -e '.[verify]'          # rtree (trimesh and embreex are base dependencies)
    python benchmarks/embree_depth.py   # 24 val scenes x 50 poses, at 64x64 and 128x128

It exports the val split (`navzoo export-scenes`), renders navzoo's depth and Embree's from the same random
standing poses, and reports the distribution of the per-pixel difference (metres of z-depth, both clamped to
the sensor's 10 m), and the smallest distance from a navigable cell centre to a wall or furniture face
(trimesh proximity). JSON goes to benchmarks/results/embree_depth.json.
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
from report import machine_info, markdown_table, write_json

from navzoo.interop.habitat_scenes import SCENES_FOLDER, export_scenes
from navzoo.interop.mesh_reference import (
    embree_depth,
    load_mesh,
    navzoo_depth,
    obstacle_clearance,
    random_poses,
)
from navzoo.names import SCENE_FAMILIES
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import generate_scene, split_scene_ids

AGENT_RADIUS, EYE, HFOV, MAX_DEPTH = 0.1, 1.25, 90.0, 10.0
DISTRIBUTION = (("median", "median m"), ("99th percentile", "p99 m"), ("worst pixel", "worst m"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=50, help="poses per scene (default 50)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="square image sizes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        summary = export_scenes(out, "val", SCENE_FAMILIES)
        errors = {size: [] for size in args.sizes}
        clearance = []
        for index, sid in enumerate(split_scene_ids("val", SCENE_FAMILIES)):
            scene = generate_scene(sid)
            mesh = load_mesh(f"{out}/{SCENES_FOLDER}/{sid}.glb")
            positions, headings = random_poses(scene, args.poses, AGENT_RADIUS, seed=index)
            for size in args.sizes:
                ours = navzoo_depth(scene, positions, headings, (size, size), HFOV, EYE, MAX_DEPTH)
                theirs = embree_depth(mesh, positions, headings, (size, size), HFOV, EYE)
                errors[size].append(
                    np.abs(np.minimum(ours, MAX_DEPTH) - np.minimum(theirs, MAX_DEPTH)).ravel()
                )
            grid = NavGrid(scene, AGENT_RADIUS)
            rows, cols = np.nonzero(grid.free)
            clearance.append(obstacle_clearance(mesh, grid.cell_centres(rows, cols)).min())
    rows = []
    for size, parts in errors.items():
        error = np.concatenate(parts)
        rows.append(
            {
                "resolution": f"{size}x{size}",
                "poses": summary.scenes * args.poses,
                "pixels": int(error.size),
                "median m": float(np.median(error)),
                "p99 m": float(np.percentile(error, 99)),
                "worst m": float(error.max()),
            }
        )
    export = {
        "scenes": summary.scenes,
        "episodes": summary.episodes,
        "triangles": summary.triangles,
        "MB": round(summary.bytes / 1e6, 2),
        "seconds": round(summary.seconds, 2),
        "min clearance m": float(min(clearance)),
    }
    metres = [(f"{name} error", lambda row, key=key: f"{row[key]:.1e} m") for name, key in DISTRIBUTION]
    print(
        markdown_table(
            [("resolution", "resolution"), ("poses", "poses"), ("pixels", "pixels"), *metres], rows
        )
    )
    print(markdown_table([(key, key) for key in export], [export]))
    write_json("embree_depth", machine_info(), {"depth": rows, "export": export})


if __name__ == "__main__":
    main()
