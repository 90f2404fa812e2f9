"""The colour of every face of a triangle mesh, read from trimesh's visuals: a base colour per face, vertex
colours, or a texture with UVs, as the mesh renderer (navzoo.sim.scans.raycast) shades its hits.

glTF keeps a material's base colour factor linear; it is encoded to sRGB here, as a texture's pixels are.
Textures that cannot be decoded (HM3D's Basis-compressed ones) fall back to the material's base colour,
with one TextureWarning for the mesh.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import trimesh


class TextureWarning(UserWarning):
    """A mesh part has texture coordinates but no base-colour texture that could be decoded."""


@dataclass
class Surfaces:
    """The colour of every face. A face is drawn in the first of these it has: its texture (texture >= 0),
    its vertices' colours (vertex_coloured), its base colour."""

    base_color: np.ndarray  # uint8 [F, 3]
    vertex_color: np.ndarray  # float32 [V, 3] (zeros where unused)
    vertex_coloured: np.ndarray  # bool [F]
    uv: np.ndarray  # float32 [V, 2], trimesh's convention: v = 0 at the image's bottom row
    texture: np.ndarray  # int32 [F], index into the textures, -1: none
    texels: np.ndarray  # uint8 [K, 3]: every texture's pixels, row-major, one after another
    texture_offset: np.ndarray  # int64 [T]: where each texture starts in texels
    texture_shape: np.ndarray  # int64 [T, 2]: (rows, cols) of each texture

    @classmethod
    def uniform(cls, num_vertices: int, num_faces: int, color=(128, 128, 128)) -> Surfaces:
        """Every face in one colour."""
        return cls(
            base_color=np.tile(np.asarray(color, np.uint8), (num_faces, 1)),
            vertex_color=np.zeros((num_vertices, 3), np.float32),
            vertex_coloured=np.zeros(num_faces, bool),
            uv=np.zeros((num_vertices, 2), np.float32),
            texture=np.full(num_faces, -1, np.int32),
            texels=np.zeros((1, 3), np.uint8),
            texture_offset=np.zeros(0, np.int64),
            texture_shape=np.zeros((0, 2), np.int64),
        )


def mesh_surfaces(
    meshes: trimesh.Trimesh | trimesh.Scene | list[trimesh.Trimesh],
) -> tuple[np.ndarray, np.ndarray, Surfaces]:
    """(vertices float32 [V, 3], faces int32 [F, 3], Surfaces) of trimesh meshes, read from their
    `visual`: ColorVisuals (face or vertex colours) or TextureVisuals (a material's base colour and, with
    UVs, its decoded image). A scene's meshes are taken with their transforms applied. Parts whose texture
    cannot be decoded fall back to their base colour, with one TextureWarning for them all."""
    import trimesh

    if isinstance(meshes, trimesh.Scene):
        parts_in: list[Any] = list(meshes.dump(concatenate=False))
    elif isinstance(meshes, trimesh.Trimesh):
        parts_in = [meshes]
    else:
        parts_in = list(meshes)
    parts = [_part_surfaces(mesh) for mesh in parts_in]
    undecodable = [
        str(mesh.metadata.get("name", i))
        for i, (mesh, p) in enumerate(zip(parts_in, parts, strict=True))
        if p[1]
    ]
    if undecodable:
        warnings.warn(
            f"{len(undecodable)} mesh part(s) ({', '.join(undecodable[:5])}) have texture coordinates but no "
            "base-colour texture that could be decoded (HM3D's Basis-compressed textures are such): their "
            "RGB falls back to the material's base colour; depth is unaffected",
            TextureWarning,
            stacklevel=2,
        )
    return _join([p[0] for p in parts])


@dataclass
class _Part:
    vertices: np.ndarray
    faces: np.ndarray
    base_color: np.ndarray  # uint8 [F, 3]
    vertex_color: np.ndarray | None  # uint8 [V, 3]
    uv: np.ndarray | None
    image: np.ndarray | None  # uint8 [rows, cols, 3]


def _part_surfaces(mesh: trimesh.Trimesh) -> tuple[_Part, bool]:
    """One mesh's surfaces, and whether it has a texture that could not be decoded."""
    from trimesh.visual import ColorVisuals, TextureVisuals

    vertices, faces = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    part = _Part(vertices, faces, np.zeros((len(faces), 3), np.uint8), None, None, None)
    visual = mesh.visual
    if isinstance(visual, TextureVisuals):
        material = visual.material
        part.base_color[:] = _material_color(material)
        uv = getattr(visual, "uv", None)
        if uv is None or len(uv) != len(vertices):
            return part, False
        image = _decode(getattr(material, "baseColorTexture", None) or getattr(material, "image", None))
        if image is None:
            return part, True
        part.uv, part.image = np.asarray(uv, np.float32), image
    elif isinstance(visual, ColorVisuals) and visual.kind == "vertex":
        part.vertex_color = np.asarray(visual.vertex_colors)[:, :3].astype(np.uint8)
    elif isinstance(visual, ColorVisuals):  # face colours, or trimesh's default colour
        part.base_color[:] = np.asarray(visual.face_colors)[:, :3]
    return part, False


def _material_color(material: Any) -> np.ndarray:
    """A material's base colour as sRGB uint8. glTF's baseColorFactor is linear (trimesh keeps it as
    uint8), so it is encoded to sRGB as a texture's pixels are; a simple material's diffuse is used as is."""
    factor = getattr(material, "baseColorFactor", None)
    if factor is not None:
        linear = np.asarray(factor, np.float64)[:3] / 255.0
        srgb = np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)
        return np.round(srgb * 255).astype(np.uint8)
    diffuse = getattr(material, "diffuse", None)
    if diffuse is not None:
        return np.asarray(diffuse, np.uint8)[:3]
    return np.full(3, 255, np.uint8)  # glTF's default base colour: white


def _decode(image: Any) -> np.ndarray | None:
    """A PIL image's pixels as uint8 [rows, cols, 3], or None if there is none or it cannot be decoded."""
    if image is None:
        return None
    try:
        return np.asarray(image.convert("RGB"), np.uint8)
    except (OSError, ValueError, SyntaxError):  # what PIL raises for truncated or unknown data
        return None


def _join(parts: list[_Part]) -> tuple[np.ndarray, np.ndarray, Surfaces]:
    vertex_offsets = np.cumsum([0] + [len(p.vertices) for p in parts])
    images = [p.image for p in parts if p.image is not None]
    texel_offsets = np.cumsum([0] + [im.shape[0] * im.shape[1] for im in images])
    texture_index = np.cumsum([p.image is not None for p in parts]) - 1
    vertex_color, uv, texture = [], [], []
    for part, index in zip(parts, texture_index, strict=True):
        n_vertices, n_faces = len(part.vertices), len(part.faces)
        colors = part.vertex_color
        vertex_color.append(np.zeros((n_vertices, 3), np.float32) if colors is None else colors)
        uv.append(np.zeros((n_vertices, 2), np.float32) if part.uv is None else part.uv)
        texture.append(np.full(n_faces, index if part.image is not None else -1, np.int32))
    surfaces = Surfaces(
        base_color=np.concatenate([p.base_color for p in parts]),
        vertex_color=np.concatenate(vertex_color).astype(np.float32),
        vertex_coloured=np.concatenate([np.full(len(p.faces), p.vertex_color is not None) for p in parts]),
        uv=np.concatenate(uv).astype(np.float32),
        texture=np.concatenate(texture),
        texels=np.concatenate([im.reshape(-1, 3) for im in images]) if images else np.zeros((1, 3), np.uint8),
        texture_offset=texel_offsets[:-1].astype(np.int64),
        texture_shape=np.array([im.shape[:2] for im in images], np.int64).reshape(-1, 2),
    )
    vertices = np.concatenate([p.vertices for p in parts]).astype(np.float32)
    faces = np.concatenate([p.faces + o for p, o in zip(parts, vertex_offsets[:-1], strict=True)])
    return vertices, faces.astype(np.int32), surfaces
