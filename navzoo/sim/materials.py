"""Surface appearance: a fixed table of materials with a base colour, a second colour and a pattern.

Patterns are evaluated at the hit point in world metres, so textures are stable as the agent moves and
differ between floors, walls and furniture (RGB carries information about where the agent is).
"""

from dataclasses import dataclass

import numpy as np

PLAIN, STRIPES_U, CHECKER, STRIPES_V = 0, 1, 2, 3


@dataclass(frozen=True)
class Material:
    name: str
    color: tuple[int, int, int]
    alt_color: tuple[int, int, int]
    pattern: int
    period: float  # metres per pattern repeat


FLOORS = (
    Material("oak", (176, 132, 86), (150, 108, 66), STRIPES_U, 0.30),
    Material("walnut", (110, 74, 48), (92, 60, 38), STRIPES_U, 0.25),
    Material("white-tiles", (222, 222, 214), (188, 188, 182), CHECKER, 0.60),
    Material("blue-tiles", (96, 136, 176), (70, 104, 140), CHECKER, 0.40),
    Material("grey-carpet", (120, 120, 126), (112, 112, 118), CHECKER, 0.10),
    Material("red-carpet", (150, 52, 56), (132, 44, 48), CHECKER, 0.12),
    Material("concrete", (150, 148, 140), (140, 138, 132), CHECKER, 1.00),
    Material("marble", (232, 226, 216), (200, 194, 186), CHECKER, 1.20),
)
WALLS = (
    Material("white-paint", (236, 234, 228), (236, 234, 228), PLAIN, 1.0),
    Material("cream-paint", (238, 224, 188), (238, 224, 188), PLAIN, 1.0),
    Material("sky-paint", (168, 198, 226), (168, 198, 226), PLAIN, 1.0),
    Material("mint-paint", (176, 220, 186), (176, 220, 186), PLAIN, 1.0),
    Material("rose-paint", (230, 182, 190), (230, 182, 190), PLAIN, 1.0),
    Material("grey-paint", (158, 160, 166), (158, 160, 166), PLAIN, 1.0),
    Material("striped-wallpaper", (214, 200, 160), (178, 150, 110), STRIPES_U, 0.20),
    Material("banded-wallpaper", (180, 196, 210), (140, 160, 184), STRIPES_V, 0.30),
)
FURNITURE = (
    Material("red-fabric", (186, 48, 44), (160, 38, 36), CHECKER, 0.05),
    Material("green-fabric", (58, 130, 72), (46, 110, 60), CHECKER, 0.05),
    Material("blue-fabric", (52, 84, 160), (42, 70, 136), CHECKER, 0.05),
    Material("yellow-plastic", (230, 196, 40), (230, 196, 40), PLAIN, 1.0),
    Material("black-metal", (40, 42, 46), (64, 66, 72), STRIPES_V, 0.10),
    Material("pine", (214, 176, 120), (190, 150, 96), STRIPES_U, 0.08),
    Material("teal-laminate", (40, 150, 150), (40, 150, 150), PLAIN, 1.0),
    Material("orange-leather", (214, 110, 40), (190, 92, 30), PLAIN, 1.0),
    Material("purple-velvet", (110, 56, 140), (96, 46, 124), CHECKER, 0.05),
    Material("steel", (170, 176, 184), (150, 156, 164), STRIPES_U, 0.05),
)
CEILING = Material("ceiling", (246, 244, 240), (246, 244, 240), PLAIN, 1.0)

MATERIALS = (*FLOORS, *WALLS, *FURNITURE, CEILING)
FLOOR_IDS = tuple(range(len(FLOORS)))
WALL_IDS = tuple(range(len(FLOORS), len(FLOORS) + len(WALLS)))
FURNITURE_IDS = tuple(range(len(FLOORS) + len(WALLS), len(FLOORS) + len(WALLS) + len(FURNITURE)))
CEILING_ID = len(MATERIALS) - 1


def material_table() -> dict[str, np.ndarray]:
    """The table as arrays indexed by material id, ready to move to a device."""
    return {
        "color": np.array([m.color for m in MATERIALS], dtype=np.float32),
        "alt_color": np.array([m.alt_color for m in MATERIALS], dtype=np.float32),
        "pattern": np.array([m.pattern for m in MATERIALS], dtype=np.int64),
        "period": np.array([m.period for m in MATERIALS], dtype=np.float32),
    }
