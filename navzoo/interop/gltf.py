"""glTF 2.0 binary (.glb) writing for triangle meshes with one plain colour per material.

The container is small (a 12-byte header, a JSON chunk and a binary chunk; Khronos glTF 2.0 spec, section
"GLB File Format Specification"), and writing it here keeps the scene export free of a mesh library.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

GLB_MAGIC, GLB_VERSION = 0x46546C67, 2  # "glTF"
JSON_CHUNK, BIN_CHUNK = 0x4E4F534A, 0x004E4942  # "JSON", "BIN\0"
FLOAT, UNSIGNED_INT = 5126, 5125  # accessor component types
ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER = 34962, 34963
TRIANGLES = 4


def write_glb(
    path: str | Path,
    primitives: list[tuple[np.ndarray, np.ndarray, np.ndarray, str, tuple[float, float, float]]],
    mesh_name: str = "scene",
) -> Path:
    """Write one mesh of several primitives: (positions [V, 3] float32, normals [V, 3] float32,
    triangles [T, 3] uint32, material name, base colour as linear RGB in [0, 1]) each."""
    document = {
        "asset": {"version": "2.0", "generator": "navzoo"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": mesh_name}],
        "meshes": [{"name": mesh_name, "primitives": []}],
        "materials": [],
        "accessors": [],
        "bufferViews": [],
        "buffers": [],
    }
    blob = bytearray()

    def add(array: np.ndarray, target: int, component: int, kind: str, bounds: bool = False) -> int:
        while len(blob) % 4:  # accessors start on a 4-byte boundary
            blob.append(0)
        view = {"buffer": 0, "byteOffset": len(blob), "byteLength": array.nbytes, "target": target}
        blob.extend(array.tobytes())
        document["bufferViews"].append(view)
        accessor = {
            "bufferView": len(document["bufferViews"]) - 1,
            "componentType": component,
            "count": int(array.shape[0]) * (3 if kind == "SCALAR" else 1),
            "type": kind,
        }
        if bounds:  # required for POSITION
            accessor["min"] = array.min(0).tolist()
            accessor["max"] = array.max(0).tolist()
        document["accessors"].append(accessor)
        return len(document["accessors"]) - 1

    for positions, normals, triangles, name, color in primitives:
        position = add(np.ascontiguousarray(positions, np.float32), ARRAY_BUFFER, FLOAT, "VEC3", bounds=True)
        normal = add(np.ascontiguousarray(normals, np.float32), ARRAY_BUFFER, FLOAT, "VEC3")
        indices = add(
            np.ascontiguousarray(triangles, np.uint32), ELEMENT_ARRAY_BUFFER, UNSIGNED_INT, "SCALAR"
        )
        document["materials"].append(
            {
                "name": name,
                "pbrMetallicRoughness": {
                    "baseColorFactor": [*map(float, color), 1.0],
                    "metallicFactor": 0.0,
                    "roughnessFactor": 1.0,
                },
            }
        )
        document["meshes"][0]["primitives"].append(
            {
                "attributes": {"POSITION": position, "NORMAL": normal},
                "indices": indices,
                "material": len(document["materials"]) - 1,
                "mode": TRIANGLES,
            }
        )
    while len(blob) % 4:
        blob.append(0)
    document["buffers"].append({"byteLength": len(blob)})
    text = json.dumps(document, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)  # the JSON chunk is padded with spaces
    total = 12 + 8 + len(text) + 8 + len(blob)
    data = struct.pack("<III", GLB_MAGIC, GLB_VERSION, total)
    data += struct.pack("<II", len(text), JSON_CHUNK) + text
    data += struct.pack("<II", len(blob), BIN_CHUNK) + bytes(blob)
    path = Path(path)
    path.write_bytes(data)
    return path


def srgb_to_linear(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """An 8-bit sRGB colour as glTF's linear baseColorFactor."""
    c = np.asarray(rgb, dtype=np.float64) / 255
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    red, green, blue = (float(v) for v in linear)
    return red, green, blue
