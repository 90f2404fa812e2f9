"""A stage mesh (.glb, .gltf, .ply, .obj) loaded into habitat's world frame: y up, metres.

trimesh reads the file; a glTF scene graph's node transforms are applied (as habitat-sim's joined mesh
does), then the stage frame of navzoo.sim.scans.frame. Each scene-graph node stays its own trimesh.Trimesh
with its visuals (colours, UVs and materials), so the renderer can shade it; `vertices`/`faces` are all of
them joined, for the navigation mesh and ray casting.
"""

from __future__ import annotations

import hashlib
import json
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from navzoo.errors import SceneError
from navzoo.sim.scans.frame import StageFrame, choose_frame

SUFFIXES = (".glb", ".gltf", ".ply", ".obj")
# Texture encodings trimesh cannot decode (HM3D's .basis.glb uses the first).
UNDECODABLE_TEXTURES = ("GOOGLE_texture_basis", "KHR_texture_basisu")
UNDECODABLE_MIME = ("image/x-basis", "image/ktx2")


@dataclass(frozen=True, eq=False)
class Stage:
    """A stage in habitat's world frame.

    vertices: float32 [V, 3] metres; faces: int32 [F, 3] into vertices, winding as in the file;
    parts: one trimesh.Trimesh per scene-graph node, in the world frame, with its visuals; part_of_face:
    int32 [F], which part each face came from (a part's faces are contiguous, in order);
    content_hash: sha256 of the mesh file, for caches; frame: the file-to-world frame that was applied.
    """

    path: Path
    vertices: np.ndarray
    faces: np.ndarray
    parts: tuple[trimesh.Trimesh, ...]
    part_of_face: np.ndarray
    content_hash: str
    frame: StageFrame

    @property
    def bounds(self) -> np.ndarray:
        """[[min x, y, z], [max x, y, z]] of the vertices."""
        return np.stack([self.vertices.min(0), self.vertices.max(0)])


def load_stage(path: str | Path, dataset_config: str | Path | None = None) -> Stage:
    """Load the stage mesh at `path` in the frame habitat-sim gives it with the scene dataset config
    `dataset_config` (None: habitat's "default" dataset)."""
    path = Path(path)
    if not path.is_file():
        raise SceneError(f"scene mesh {path} not found: check the path (and the scenes folder it is under)")
    if not path.name.lower().endswith(SUFFIXES):
        raise SceneError(f"scene mesh {path} is not a supported kind: give a {', '.join(SUFFIXES)} file")
    frame = choose_frame(path, dataset_config)
    _warn_undecodable_textures(path)
    try:
        loaded = trimesh.load(path, process=False)
    except Exception as error:  # trimesh raises many kinds on a corrupt file
        raise SceneError(f"scene mesh {path} cannot be read ({error}); re-export or re-download it") from None
    parts = _world_parts(loaded, frame.matrix())
    if not parts:
        raise SceneError(f"scene mesh {path} has no triangles; give a mesh of the scene's surfaces")
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts])
    vertices = np.concatenate([np.asarray(p.vertices, dtype=np.float32) for p in parts])
    faces = np.concatenate(
        [np.asarray(p.faces, dtype=np.int64) + o for p, o in zip(parts, offsets, strict=False)]
    )
    part_of_face = np.repeat(np.arange(len(parts), dtype=np.int32), [len(p.faces) for p in parts])
    return Stage(path, vertices, faces.astype(np.int32), tuple(parts), part_of_face, _sha256(path), frame)


def _world_parts(loaded, matrix: np.ndarray) -> list[trimesh.Trimesh]:
    """The triangle meshes of what trimesh loaded, node transforms and the stage frame applied."""
    # dump gives copies, each with its node's transform applied.
    geometries = loaded.dump(concatenate=False) if isinstance(loaded, trimesh.Scene) else [loaded]
    transform = np.eye(4)
    transform[:3, :3] = matrix
    parts = []
    for geometry in geometries:
        if isinstance(geometry, trimesh.Trimesh) and len(geometry.faces):
            # apply_transform would flip the winding of a mirroring transform; habitat keeps the file's.
            geometry.vertices = trimesh.transform_points(np.asarray(geometry.vertices), transform)
            parts.append(geometry)
    return parts


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _gltf_json(path: Path) -> dict:
    """The JSON part of a .glb or .gltf file ({} if it cannot be read: trimesh then reports the problem)."""
    try:
        if path.suffix.lower() == ".gltf":
            return json.loads(path.read_text())
        with path.open("rb") as file:
            magic, _version, _length, chunk_length, chunk_type = struct.unpack("<4sIIII", file.read(20))
            if magic != b"glTF" or chunk_type != 0x4E4F534A:  # "JSON"
                return {}
            return json.loads(file.read(chunk_length))
    except (OSError, ValueError, struct.error):
        return {}


def _warn_undecodable_textures(path: Path) -> None:
    """Warn when a glTF's textures are Basis/KTX2 compressed: trimesh skips them silently."""
    if path.suffix.lower() not in (".glb", ".gltf"):
        return
    document = _gltf_json(path)
    used = set(document.get("extensionsUsed", [])) | set(document.get("extensionsRequired", []))
    mimes = {image.get("mimeType") for image in document.get("images", []) if isinstance(image, dict)}
    if used & set(UNDECODABLE_TEXTURES) or mimes & set(UNDECODABLE_MIME):
        warnings.warn(
            f"{path}: its textures are Basis/KTX2 compressed, which navzoo cannot decode; the geometry "
            "loads untextured (use the scene's non-basis .glb for colour).",
            stacklevel=3,
        )
