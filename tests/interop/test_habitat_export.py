"""`navzoo export-scenes`: the habitat-sim / habitat-lab scene dataset, and navzoo's renderer and navigable
area checked against the exported meshes with an independent ray caster (Intel Embree, through trimesh).

Depth tolerance. The mesh holds exactly the renderer's geometry (boxes on the grid, the ceiling plane), so
the only expected difference is floating-point rounding. Both sides work in float32 on quantities no larger
than L + R: coordinates within the scene (L, its grid size in cells times 0.25 m) and ray lengths up to R
(10 m of z-depth at the image's edge, 14.1 m). A hit is a few tens of operations on such numbers (the grid
crossings, divisions by the ray's direction, the pixel's slope, z from the ray length); allowing 16
roundings on each side gives |dz| <= 32 * eps32 * (L + R): 8e-5 m in the smallest apartment, 2e-4 m in
the largest office, a thousandth of a grid cell.

Grazing faces. The pixel ray's direction carries a rounding of its own, which a face met at a shallow angle
a magnifies: navzoo turns each column's ray by heading - column angle in float32, off the exact angle by up
to half a float32 step (1.2e-7 rad near pi), and that moves the hit along the face by t * 1.2e-7 / tan(a).
The largest error over the 24 val scenes (benchmarks/embree_depth.py) is such a pixel: in office/val/00004
(64x64, pose 47) a column runs 1.4 degrees off the face of a wall (y = 7.5 m) and meets it 7.9 m away, 3.5e-5
m of depth from Embree's (0.28 of the tolerance); Embree cast along navzoo's own float32 ray agrees to 2e-7
m. Both sides take the same float32 poses (mesh_reference.random_poses). When Embree took them in float64,
the heading's rounding to float32 (up to 1.2e-7 rad) added to this, and office/val/00000 reached 9.8e-5 m,
0.70 of the tolerance (a column 0.73 degrees off the wall y = 9.5 m, hit 13.1 m away). Shallower angles or
longer rays could exceed the tolerance; these poses have none, and the test would show one.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import struct

import numpy as np
import pytest

from navzoo.cli.main import main as cli_main
from navzoo.errors import ConfigError
from navzoo.interop.gltf import GLB_MAGIC, srgb_to_linear
from navzoo.interop.habitat_scenes import CONFIG_NAME, SCENES_FOLDER, export_scenes
from navzoo.interop.mesh_reference import (
    embree_depth,
    load_mesh,
    navzoo_depth,
    obstacle_clearance,
    random_poses,
)
from navzoo.names import SCENE_FAMILIES
from navzoo.sim.episodes import load_episodes, split_episodes
from navzoo.sim.materials import MATERIALS
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import generate_scene

AGENT_RADIUS, EYE, HFOV, MAX_DEPTH = 0.1, 1.25, 90.0, 10.0
MAX_RAY = MAX_DEPTH * math.sqrt(2)  # horizontal ray length at the edge of a 90 degree image
SCENES_PER_FAMILY = 2
POSES_PER_SCENE = 40  # 320 poses over the four families


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    summary = export_scenes(out, "val", SCENE_FAMILIES, count=SCENES_PER_FAMILY)
    return out, summary


@pytest.fixture(scope="module")
def meshes(export):
    """The exported meshes as trimesh meshes, ray-cast with Embree: only the tests that use them need the
    verify extra."""
    for module in ("trimesh", "embreex", "rtree"):
        pytest.importorskip(module, reason="the verify extra (trimesh, embreex, rtree)")
    out, _ = export
    return lambda sid: load_mesh(out / SCENES_FOLDER / f"{sid}.glb")


def _episodes_of(out, scene_ids) -> dict:
    """The export's val episodes are navzoo's own for exactly these scenes, and name files that exist."""
    dataset = out / "datasets/pointnav/navzoo/v1/val/val.json.gz"
    episodes = load_episodes(dataset)  # navzoo reads the export back, scene paths and all
    expected = [
        e
        for e in split_episodes("val", SCENE_FAMILIES, 25, AGENT_RADIUS, 1.0, 30.0)
        if e.scene_id in scene_ids
    ]
    assert {e.scene_id for e in episodes} == set(scene_ids) and len(episodes) == len(expected)
    for got, want in zip(episodes, expected, strict=True):  # headings pass through a quaternion
        assert got == dataclasses.replace(want, heading=pytest.approx(want.heading, abs=1e-12))
    raw = json.loads(gzip.decompress(dataset.read_bytes()))
    for episode in raw["episodes"]:  # habitat-lab joins scene_id to the scenes folder
        assert (out / "scene_datasets" / episode["scene_id"]).is_file()
        assert episode["start_position"][1] == 0.0 and len(episode["start_rotation"]) == 4
    return raw


def _meshes_in(out) -> set[str]:
    return {str(p.relative_to(out / SCENES_FOLDER).with_suffix("")) for p in out.rglob("*.glb")}


def test_export_has_habitats_layout_and_episodes_that_resolve(export):
    out, summary = export
    assert summary.scenes == 4 * SCENES_PER_FAMILY
    config = json.loads((out / SCENES_FOLDER / CONFIG_NAME).read_text())
    assert config["stages"]["paths"][".glb"] == ["*/*/*.glb"]
    assert config["stages"]["default_attributes"]["up"] == [0.0, 1.0, 0.0]
    scenes = {f"{f}/val/{i:05d}" for f in SCENE_FAMILIES for i in range(SCENES_PER_FAMILY)}
    assert _meshes_in(out) == scenes
    _episodes_of(out, scenes)


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
    # Its positions' bounds, as the accessors declare them (readers rely on these), in habitat's frame.
    positions = [
        document["accessors"][p["attributes"]["POSITION"]] for p in document["meshes"][0]["primitives"]
    ]
    bounds = [*np.min([a["min"] for a in positions], 0), *np.max([a["max"] for a in positions], 0)]
    assert bounds == pytest.approx(_habitat_bounds("office/val/00000"))


def _habitat_bounds(sid: str) -> list[float]:
    scene = generate_scene(sid)
    width, depth = scene.size_m
    return [0, 0, -depth, width, scene.ceiling_height, 0]


def test_trimesh_reads_the_mesh_in_habitats_frame(meshes):
    assert meshes("office/val/00000").bounds.ravel().tolist() == pytest.approx(
        _habitat_bounds("office/val/00000")
    )


@pytest.mark.parametrize("size", [(64, 64), (128, 128)])
def test_renderer_depth_equals_embree_on_the_exported_mesh(meshes, size):
    errors = []
    for family in SCENE_FAMILIES:
        for index in range(SCENES_PER_FAMILY):
            sid = f"{family}/val/{index:05d}"
            scene = generate_scene(sid)
            positions, headings = random_poses(scene, POSES_PER_SCENE, AGENT_RADIUS, seed=index)
            ours = navzoo_depth(scene, positions, headings, size, HFOV, EYE, MAX_DEPTH)
            embree = embree_depth(meshes(sid), positions, headings, size, HFOV, EYE)
            assert np.isfinite(embree).all()  # the mesh is closed: every ray hits something
            error = np.abs(np.minimum(ours, MAX_DEPTH) - np.minimum(embree, MAX_DEPTH))
            tolerance = 32 * np.finfo(np.float32).eps * (max(scene.size_m) + MAX_RAY)
            assert error.max() <= tolerance, f"{sid}: {error.max():.2e} m > {tolerance:.2e} m"
            errors.append(error.ravel())
    assert len(np.concatenate(errors)) == 4 * SCENES_PER_FAMILY * POSES_PER_SCENE * size[0] * size[1]


def test_navigable_places_keep_the_agents_radius_from_walls_and_furniture(meshes):
    for family in SCENE_FAMILIES:
        sid = f"{family}/val/00001"
        grid = NavGrid(generate_scene(sid), AGENT_RADIUS)
        rows, cols = np.nonzero(grid.free)
        pick = np.random.default_rng(0).choice(len(rows), size=min(500, len(rows)), replace=False)
        clearance = obstacle_clearance(meshes(sid), grid.cell_centres(rows[pick], cols[pick]))
        assert clearance.min() >= AGENT_RADIUS - 1e-6, (
            f"{sid}: a free place {clearance.min():.4f} m from a wall"
        )


def test_an_update_adds_its_scenes_to_the_export(tmp_path):
    """habitat-sim loads every mesh under the config and habitat-lab one episodes file per split: after an
    update the split's episodes cover every scene there, as one export of them all would."""
    out = tmp_path / "export"
    export_scenes(out, "val", SCENE_FAMILIES, count=1)
    before = _episodes_of(out, _meshes_in(out))
    summary = export_scenes(out, "val", ("office",), count=1)  # a scene that is already there
    assert (summary.scenes, summary.kept, summary.episodes) == (4, 3, 100)
    assert (
        json.loads(gzip.decompress((out / "datasets/pointnav/navzoo/v1/val/val.json.gz").read_bytes()))
        == before
    )
    summary = export_scenes(out, "val", ("office",), count=2)  # adds office/val/00001
    scenes = {f"{f}/val/00000" for f in SCENE_FAMILIES} | {"office/val/00001"}
    assert _meshes_in(out) == scenes and (summary.scenes, summary.kept) == (5, 3)
    _episodes_of(out, scenes)
    assert summary.bytes == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    export_scenes(out, "test", ("apartment-s",), count=1)  # another split beside it leaves val's alone
    assert _meshes_in(out) == scenes | {"apartment-s/test/00000"}
    _episodes_of(out, scenes)


def test_export_cli_and_bad_input(tmp_path, capsys):
    one = str(tmp_path / "one")
    assert cli_main(["export-scenes", one, "--scene-families", "apartment-s", "--count", "1"]) == 0
    assert "wrote 1 scenes (" in capsys.readouterr().out
    assert cli_main(["export-scenes", one, "--scene-families", "office", "--count", "1"]) == 0
    assert "wrote 2 scenes, 1 of them already there" in capsys.readouterr().out
    (tmp_path / "one" / SCENES_FOLDER / "office/val/00009.glb").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"office/val/00009\.glb is not one of navzoo's scene meshes"):
        export_scenes(tmp_path / "one", families=("office",), count=1)
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
