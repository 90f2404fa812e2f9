"""Top-down maps of episodes in the style of DD-PPO's Fig. 6: navigable area, obstacles shaded by height,
the shortest path, the agent's trajectory coloured by time, and start and goal markers."""

from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from PIL import Image, ImageDraw

from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import Scene

WALL = (60, 62, 68)
FLOOR = (236, 236, 230)
NAVIGABLE = (214, 228, 214)
SHORTEST_PATH = (40, 170, 80)
START = (40, 90, 220)
GOAL = (220, 50, 50)

# the 16-neighbourhood of the navigation graph: the 8 adjacent cells and the 8 knight moves
_NEIGHBOURS = [
    (dr, dc)
    for dr in (-2, -1, 0, 1, 2)
    for dc in (-2, -1, 0, 1, 2)
    if max(abs(dr), abs(dc)) == 1 or {abs(dr), abs(dc)} == {1, 2}
]


def shortest_path(nav: NavGrid, field: np.ndarray, start_xy) -> np.ndarray:
    """Points [K, 2] from start to the field's source, descending the distance field cell by cell."""
    row, col = (int(v) for v in nav.cell_of(np.asarray(start_xy, dtype=np.float64)))
    points = [np.asarray(start_xy, dtype=np.float64)]
    rows, cols = field.shape
    while np.isfinite(field[row, col]) and field[row, col] > 0:
        best = (field[row, col], row, col)
        for dr, dc in _NEIGHBOURS:
            r, c = row + dr, col + dc
            if 0 <= r < rows and 0 <= c < cols and field[r, c] < best[0]:
                best = (field[r, c], r, c)
        if (best[1], best[2]) == (row, col):
            break
        row, col = best[1], best[2]
        points.append(nav.cell_centres(row, col))
    return np.asarray(points)


@dataclass(frozen=True)
class MapCanvas:
    """A scene's floor from above, +y up, ready to draw an episode on: `image` uint8 [H, W, 3] at
    `px_per_m` pixels per metre, its bottom-left corner at the floor point `origin` (x, y)."""

    image: np.ndarray
    px_per_m: float
    origin: tuple[float, float] = (0.0, 0.0)


def scene_canvas(scene: Scene, nav: NavGrid | None = None, cell_pixels: int = 6) -> MapCanvas:
    """A navzoo scene from above, `cell_pixels` pixels per scene cell: obstacles shaded by height and, with
    `nav`, the floor the agent can reach tinted."""
    heights, ceiling = scene.heights, scene.ceiling_height
    cells = np.empty((*heights.shape, 3), dtype=np.float32)
    cells[:] = FLOOR
    shade = (0.45 + 0.45 * (1 - heights / ceiling))[..., None]  # taller furniture is darker
    furniture = (heights > 0) & (heights < ceiling)
    cells[furniture] = (np.array([150, 130, 110]) * shade)[furniture]
    cells[heights >= ceiling] = WALL
    image = np.repeat(np.repeat(cells, cell_pixels, 0), cell_pixels, 1)
    if nav is not None:  # tint the floor the agent can reach
        # The navigation grid is finer than the scene's cells, so an odd `cell_pixels` splits its cells
        # unevenly: each pixel takes the navigation cell its top-left corner lies in.
        rows = np.arange(image.shape[0]) * nav.shape[0] // image.shape[0]
        cols = np.arange(image.shape[1]) * nav.shape[1] // image.shape[1]
        island = nav.island[np.ix_(rows, cols)]
        image[island & (image == FLOOR).all(-1)] = NAVIGABLE
    return MapCanvas(np.flipud(image).astype(np.uint8), cell_pixels / scene.cell_size)


def draw_topdown(
    scene: Scene,
    nav: NavGrid | None = None,
    trajectory=None,
    goal=None,
    path=None,
    headings=None,
    cell_pixels: int = 6,
    success_radius: float = 0.2,
) -> np.ndarray:
    """An RGB uint8 image [H, W, 3] of a navzoo scene from above, +y up, `cell_pixels` pixels per scene
    cell, with an episode drawn on it (draw_episode)."""
    canvas = scene_canvas(scene, nav, cell_pixels)
    return draw_episode(canvas, trajectory, goal, path, headings, success_radius)


def draw_episode(
    canvas: MapCanvas, trajectory=None, goal=None, path=None, headings=None, success_radius: float = 0.2
) -> np.ndarray:
    """`canvas` with an episode drawn on it, as an RGB uint8 image [H, W, 3].

    trajectory: agent positions [T, 2] (coloured from dark to bright with time); goal: (x, y);
    path: shortest-path points [K, 2]; headings: agent headings [T] (the last one is drawn as an arrow).
    """
    image = Image.fromarray(canvas.image)
    draw = ImageDraw.Draw(image)
    px_per_m, (ox, oy) = canvas.px_per_m, canvas.origin
    width = max(2, int(px_per_m * 0.06))

    def to_px(xy):
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        return [(float((x - ox) * px_per_m), float(image.height - (y - oy) * px_per_m)) for x, y in xy]

    if path is not None and len(path) > 1:
        draw.line(to_px(path), fill=SHORTEST_PATH, width=width + 1)
    if goal is not None:
        ((gx, gy),) = to_px(goal)
        r = max(success_radius * px_per_m, 4)
        draw.ellipse([gx - r, gy - r, gx + r, gy + r], fill=GOAL, outline=(120, 0, 0))
    if trajectory is not None and len(trajectory) > 0:
        points = to_px(trajectory)
        colours = matplotlib.colormaps["plasma"](np.linspace(0.0, 0.9, max(len(points) - 1, 1)))
        for a, b, colour in zip(points[:-1], points[1:], colours, strict=False):
            draw.line([a, b], fill=tuple(int(255 * c) for c in colour[:3]), width=width)
        sx, sy = points[0]
        r = max(0.15 * px_per_m, 4)
        draw.rectangle([sx - r, sy - r, sx + r, sy + r], fill=START, outline=(0, 0, 90))
        if headings is not None:
            ex, ey = points[-1]
            heading = float(np.asarray(headings)[-1])
            tip = (ex + 0.4 * px_per_m * np.cos(heading), ey - 0.4 * px_per_m * np.sin(heading))
            draw.line([(ex, ey), tip], fill=(0, 0, 0), width=width)
            draw.ellipse([ex - r / 2, ey - r / 2, ex + r / 2, ey + r / 2], fill=(0, 0, 0))
    return np.asarray(image)


def save_png(image: np.ndarray, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)
    return path
