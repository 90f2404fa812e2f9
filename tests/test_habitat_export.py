"""`navzoo export-scenes`: the habitat-sim / habitat-lab scene dataset, and navzoo's renderer and navigable
area checked against the exported meshes with an independent ray caster (Intel Embree, through trimesh).

Depth tolerance. The mesh holds exactly the renderer's geometry (boxes on the grid, the ceiling plane), so
the only expected difference is floating-point rounding. Both sides work in float32 on quantities no larger
than L + R: coordinates within the scene (L, its grid size in cells times 0.25 m) and ray lengths up to R
(10 m of z-depth at the image's edge, 14.1 m). A hit is a few tens of operations on such numbers (the grid
crossings, divisions by the ray's direction, the pixel's slope, z from the ray length); allowing 16
roundings on each side gives |dz| <= 32 * eps32 * (L + R): 8e-5 m in the smallest apartment, 2e-4 m in
the largest office, a thousandth of a grid cell. A pixel ray that grazes an edge of a box could hit the
other face within that rounding; no such pixel exists in these poses, and the test would show it.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import struct

import numpy as np
import pytest

from navzoo.cli import main as cli_main
from navzoo.errors import ConfigError
from navzoo.gltf import GLB_MAGIC, srgb_to_linear
from navzoo.habitat_export import CONFIG_NAME, SCENES_FOLDER, export_scenes
from navzoo.names import SCENE_FAMILIES
from navzoo.sim.episodes import load_episodes, split_episodes
from navzoo.sim.materials import MATERIALS
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import generate_scene

trimesh = pytest.importorskip("trimesh", reason="the verify extra (trimesh, embreex, rtree)")
from navzoo.mesh_reference import (  # noqa: E402
    embree_depth,
    load_mesh,
    navzoo_depth,
    obstacle_clearance,
    random_poses,
)

AGENT_RADIUS, EYE, HFOV, MAX_DEPTH = 0.1, 1.25, 90.0, 10.0
MAX_RAY = MAX_DEPTH * math.sqrt(2)  # horizontal ray length at the edge of a 90 degree image
SCENES_PER_FAMILY = 2
POSES_PER_SCENE = 40  # 320 poses over the four families


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    summary = export_scenes(out, "val", SCENE_FAMILIES, count=SCENES_PER_FAMILY)
    return out, summary


def test_export_has_habitats_layout_and_episodes_that_resolve(export):
    out, summary = export
    assert summary.scenes == 4 * SCENES_PER_FAMILY
    config = json.loads((out / SCENES_FOLDER / CONFIG_NAME).read_text())
    assert config["stages"]["paths"][".glb"] == ["*/*/*.glb"]
    assert config["stages"]["default_attributes"]["up"] == [0.0, 1.0, 0.0]
    dataset = out / "datasets/pointnav/navzoo/v1/val/val.json.gz"
    episodes = load_episodes(dataset)  # navzoo reads the export back, scene paths and all
    ids = {e.scene_id for e in episodes}
    expected = [
        e for e in split_episodes("val", SCENE_FAMILIES, 25, AGENT_RADIUS, 1.0, 30.0) if e.scene_id in ids
    ]
    assert len(ids) == summary.scenes and len(episodes) == len(expected)
    for got, want in zip(episodes, expected, strict=True):  # headings pass through a quaternion
        assert got == dataclasses.replace(want, heading=pytest.approx(want.heading, abs=1e-12))
    raw = json.loads(gzip.decompress(dataset.read_bytes()))
    for episode in raw["episodes"]:  # habitat-lab joins scene_id to the scenes folder
        assert (out / "scene_datasets" / episode["scene_id"]).is_file()
        assert episode["start_position"][1] == 0.0 and len(episode["start_rotation"]) == 4


def test_glb_is_valid_gltf_with_the_simulators_colours(export):
    out, _ = export
    path = out / SCENES_FOLDER / "office/val/00000.glb"
    data = path.read_bytes()
    magic, version, length = struct.unpack("<III", data[:12])
    assert (magic, version, length) == (GLB_MAGIC, 2, len(data))
    json_length = struct.unpack("<I", data[12:16])[0]
    document = json.loads(data[20 : 20 + json_length])
    colours = {m["name"]: m["pbrMetallicRoughness"]["baseColorFactor"] for m in document["materials"]}
    by_name = {m.name: m for m in MATERIALS}
    assert "ceiling" in colours and len(colours) >= 4
    for name, colour in colours.items():
        assert colour[:3] == pytest.approx(srgb_to_linear(by_name[name].color))
    scene = generate_scene("office/val/00000")
    mesh = trimesh.load(path, force="mesh")
    width, depth = scene.size_m
    assert mesh.bounds.ravel().tolist() == pytest.approx([0, 0, -depth, width, scene.ceiling_height, 0])


@pytest.mark.parametrize("size", [(64, 64), (128, 128)])
def test_renderer_depth_equals_embree_on_the_exported_mesh(export, size):
    out, _ = export
    errors = []
    for family in SCENE_FAMILIES:
        for index in range(SCENES_PER_FAMILY):
            sid = f"{family}/val/{index:05d}"
            scene = generate_scene(sid)
            positions, headings = random_poses(scene, POSES_PER_SCENE, AGENT_RADIUS, seed=index)
            ours = navzoo_depth(scene, positions, headings, size, HFOV, EYE, MAX_DEPTH)
            embree = embree_depth(
                load_mesh(out / SCENES_FOLDER / f"{sid}.glb"), positions, headings, size, HFOV, EYE
            )
            assert np.isfinite(embree).all()  # the mesh is closed: every ray hits something
            error = np.abs(np.minimum(ours, MAX_DEPTH) - np.minimum(embree, MAX_DEPTH))
            tolerance = 32 * np.finfo(np.float32).eps * (max(scene.size_m) + MAX_RAY)
            assert error.max() <= tolerance, f"{sid}: {error.max():.2e} m > {tolerance:.2e} m"
            errors.append(error.ravel())
    assert len(np.concatenate(errors)) == 4 * SCENES_PER_FAMILY * POSES_PER_SCENE * size[0] * size[1]


def test_navigable_places_keep_the_agents_radius_from_walls_and_furniture(export):
    out, _ = export
    for family in SCENE_FAMILIES:
        sid = f"{family}/val/00001"
        grid = NavGrid(generate_scene(sid), AGENT_RADIUS)
        rows, cols = np.nonzero(grid.free)
        pick = np.random.default_rng(0).choice(len(rows), size=min(500, len(rows)), replace=False)
        clearance = obstacle_clearance(
            load_mesh(out / SCENES_FOLDER / f"{sid}.glb"), grid.cell_centres(rows[pick], cols[pick])
        )
        assert clearance.min() >= AGENT_RADIUS - 1e-6, (
            f"{sid}: a free place {clearance.min():.4f} m from a wall"
        )


def test_export_cli_and_bad_input(tmp_path, capsys):
    assert (
        cli_main(["export-scenes", str(tmp_path / "one"), "--families", "apartment-s", "--count", "1"]) == 0
    )
    assert "wrote 1 scenes" in capsys.readouterr().out
    assert (
        cli_main(["export-scenes", str(tmp_path / "one"), "--families", "office", "--count", "1"]) == 0
    )  # update
    (tmp_path / "other" / "notes").mkdir(parents=True)
    with pytest.raises(ConfigError, match="holds other files"):
        export_scenes(tmp_path / "other")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="this is a file"):
        export_scenes(tmp_path / "file")
    with pytest.raises(ConfigError, match=r"an integer in 1 \.\. 6"):
        export_scenes(tmp_path / "new", count=0)
    with pytest.raises(ConfigError, match="one or more of"):
        export_scenes(tmp_path / "new", families=("kitchen",))
    with pytest.raises(ConfigError, match="train split has"):
        export_scenes(tmp_path / "new", split="train")
    assert not (tmp_path / "new").exists()  # nothing written for bad input
