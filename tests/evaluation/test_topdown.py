"""Top-down maps at every pixel scale."""

import numpy as np
import pytest

from navzoo.evaluation.topdown import NAVIGABLE, draw_topdown
from navzoo.sim.episodes import scene_assets


@pytest.mark.parametrize("cell_pixels", [2, 3, 4, 11])
def test_navigable_tint_at_any_scale(cell_pixels):
    # The navigation grid has two cells a side per scene cell; an odd scale splits them unevenly, which
    # once broke the replay view of every scene whose size gave it an odd scale.
    assets = scene_assets("apartment/val/00002", 0.1, 1.0, 30.0)
    image = draw_topdown(assets.scene, assets.nav, cell_pixels=cell_pixels)
    rows, cols = assets.scene.heights.shape
    assert image.shape == (rows * cell_pixels, cols * cell_pixels, 3)
    tinted = np.flipud((image == NAVIGABLE).all(-1))  # row 0 at y = 0, as the grids
    # A pixel is tinted exactly where the navigation cell under its top-left corner is reachable floor.
    island = assets.nav.island
    for y, x in [(0, 0), (5, 7), (image.shape[0] // 2, image.shape[1] // 3), (image.shape[0] - 1, 3)]:
        cell = (y * island.shape[0] // image.shape[0], x * island.shape[1] // image.shape[1])
        floor = assets.scene.heights[y // cell_pixels, x // cell_pixels] == 0
        assert tinted[y, x] == (island[cell] and floor)
    assert tinted.sum() > 0.2 * tinted.size
