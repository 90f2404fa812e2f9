"""Loading stage meshes into habitat's frame (docs/design/habitat-sim-rules.md §1)."""

import hashlib
import json
import struct
import warnings

import numpy as np
import pytest
import trimesh

from navzoo.errors import SceneError
from navzoo.sim.scans.frame import stage_config_path
from navzoo.sim.scans.stage import load_stage
from tests.sim.scans.meshes import box_room

Z_UP_TO_Y_UP = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)


def z_up_room() -> trimesh.Trimesh:
    """A 4 x 3 x 2.5 m room as a z-up file holds it: habitat's world (x, y, z) is the file's (x, z, -y)."""
    mesh = box_room(4, 3, 2.5).mesh()
    mesh.apply_transform(np.linalg.inv(Z_UP_TO_Y_UP))
    return mesh


def test_bare_glb_is_z_up(tmp_path):
    path = tmp_path / "room.glb"
    z_up_room().export(path)
    stage = load_stage(path)
    np.testing.assert_allclose(stage.bounds, [[0, 0, 0], [4, 2.5, 3]], atol=1e-5)
    assert stage.vertices.dtype == np.float32 and stage.faces.dtype == np.int32
    assert stage.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(stage.parts) == 1 and len(stage.part_of_face) == len(stage.faces)


def test_stage_config_beside_the_mesh_sets_the_frame(tmp_path):
    path = tmp_path / "room.basis.glb"
    box_room(4, 3, 2.5).mesh().export(path)  # already y-up
    assert stage_config_path(path) == tmp_path / "room.stage_config.json"
    (tmp_path / "room.stage_config.json").write_text(
        json.dumps({"up": [0, 1, 0], "front": [0, 0, -1], "units_to_meters": 100.0, "origin": [5, 5, 5]})
    )
    stage = load_stage(path)  # units_to_meters and origin are ignored, as in habitat-sim
    np.testing.assert_allclose(stage.bounds, [[0, 0, 0], [4, 2.5, 3]], atol=1e-5)


def test_dataset_default_attributes_override_the_glb_default(tmp_path):
    path = tmp_path / "scenes" / "room.glb"
    path.parent.mkdir()
    box_room(4, 3, 2.5).mesh().export(path)
    config = tmp_path / "x.scene_dataset_config.json"
    config.write_text(json.dumps({"stages": {"default_attributes": {"up": [0, 1, 0], "front": [0, 0, -1]}}}))
    np.testing.assert_allclose(load_stage(path, config).bounds[1], [4, 2.5, 3], atol=1e-5)
    # Its per-stage entry wins over the template.
    config.write_text(
        json.dumps(
            {
                "stages": {
                    "default_attributes": {"up": [0, 1, 0], "front": [0, 0, -1]},
                    "configs": [
                        {
                            "original_file": "scenes/room.glb",
                            "attributes": {"up": [0, 0, 1], "front": [0, 1, 0]},
                        }
                    ],
                }
            }
        )
    )
    np.testing.assert_allclose(load_stage(path, config).bounds, [[0, 0, -2.5], [4, 3, 0]], atol=1e-5)


def test_glb_node_transforms_and_scale_are_applied(tmp_path):
    scene = trimesh.Scene()
    scene.add_geometry(
        box_room(1, 1, 1).mesh(), transform=trimesh.transformations.translation_matrix([10, 0, 0])
    )
    scene.add_geometry(box_room(1, 1, 1).mesh())
    path = tmp_path / "two.glb"
    scene.export(path)
    (tmp_path / "two.stage_config.json").write_text(
        json.dumps({"up": [0, 1, 0], "front": [0, 0, -1], "scale": [2, 2, 2]})
    )
    stage = load_stage(path)
    assert len(stage.parts) == 2
    np.testing.assert_allclose(stage.bounds, [[0, 0, 0], [22, 2, 2]], atol=1e-5)


def test_ply_and_obj_are_y_up(tmp_path):
    for suffix in (".ply", ".obj"):
        path = tmp_path / f"room{suffix}"
        box_room(4, 3, 2.5).mesh().export(path)
        np.testing.assert_allclose(load_stage(path).bounds, [[0, 0, 0], [4, 2.5, 3]], atol=1e-5)


def test_non_orthogonal_up_and_front_fall_back_to_y_up(tmp_path):
    path = tmp_path / "room.glb"
    box_room(4, 3, 2.5).mesh().export(path)
    (tmp_path / "room.stage_config.json").write_text(json.dumps({"up": [0, 0, 1]}))  # front stays -z
    with pytest.warns(UserWarning, match="not orthogonal"):
        stage = load_stage(path)
    np.testing.assert_allclose(stage.bounds[1], [4, 2.5, 3], atol=1e-5)


def test_errors_name_the_file(tmp_path):
    with pytest.raises(SceneError, match="not found"):
        load_stage(tmp_path / "missing.glb")
    (tmp_path / "scene.fbx").write_bytes(b"x")
    with pytest.raises(SceneError, match="supported"):
        load_stage(tmp_path / "scene.fbx")
    (tmp_path / "broken.glb").write_bytes(b"not a glb at all")
    with pytest.raises(SceneError, match=r"broken\.glb"):
        load_stage(tmp_path / "broken.glb")
    trimesh.PointCloud(np.random.default_rng(0).random((10, 3))).export(tmp_path / "points.ply")
    with pytest.raises(SceneError, match="no triangles"):
        load_stage(tmp_path / "points.ply")


def _with_json(glb: bytes, change) -> bytes:
    """The glb with its JSON chunk passed through `change`."""
    chunk_length = struct.unpack_from("<I", glb, 12)[0]
    document = change(json.loads(glb[20 : 20 + chunk_length]))
    text = json.dumps(document).encode()
    text += b" " * (-len(text) % 4)
    rest = glb[20 + chunk_length :]
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + rest
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


def test_basis_textures_warn_and_geometry_loads(tmp_path):
    path = tmp_path / "scan.basis.glb"
    z_up_room().export(path)
    path.write_bytes(
        _with_json(path.read_bytes(), lambda d: {**d, "extensionsUsed": ["GOOGLE_texture_basis"]})
    )
    with pytest.warns(UserWarning, match="scan.basis.glb.*Basis"):
        stage = load_stage(path)
    assert len(stage.faces) == 12
    plain = tmp_path / "plain.glb"
    z_up_room().export(plain)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_stage(plain)
