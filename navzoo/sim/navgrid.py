"""Where the agent can stand, and geodesic distances between places.

The navigation grid has half the scene's cell size (0.125 m). A navigation cell is free (the agent can
stand there) when the agent's disc at its centre touches no obstacle. Passable cells are joined to their 16
neighbours (straight, diagonal and knight moves) when the straight segment between the centres stays on
passable cells; Dijkstra over that graph gives path lengths that are never below the euclidean distance and
within a few percent of the true geodesic.
A distance field is computed once per goal (amortised over every episode and step that uses it).
"""

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, dijkstra

from navzoo.sim.physics import disc_free
from navzoo.sim.scenes import Scene

NAV_SUBDIVISION = 2

# (d_row, d_col, cells the segment crosses besides its ends), one of each symmetric pair.
EDGES = (
    (0, 1, ()),
    (1, 0, ()),
    (1, 1, ((0, 1), (1, 0))),
    (1, -1, ((0, -1), (1, 0))),
    (1, 2, ((0, 1), (1, 1))),
    (2, 1, ((1, 0), (1, 1))),
    (1, -2, ((0, -1), (1, -1))),
    (2, -1, ((1, 0), (1, -1))),
)


class NavGrid:
    """Free space of one scene for an agent of a given radius, with geodesic distance fields."""

    def __init__(self, scene: Scene, agent_radius: float):
        self.cell_size = scene.cell_size / NAV_SUBDIVISION
        rows, cols = scene.shape[0] * NAV_SUBDIVISION, scene.shape[1] * NAV_SUBDIVISION
        self.shape = (rows, cols)
        centres = self.cell_centres(np.arange(rows)[:, None], np.arange(cols)[None, :])
        points = torch.from_numpy(centres.reshape(-1, 2)).float()
        heights = torch.from_numpy(scene.heights)[None]
        slots = torch.zeros(len(points), dtype=torch.long)
        # Where the agent may stand: its disc at the cell centre is clear.
        self.free = (
            disc_free(heights, scene.cell_size, slots, points, agent_radius).reshape(rows, cols).numpy()
        )
        # Paths may pass cells whose centre is within half a cell of clear: otherwise every path would keep
        # up to half a cell more clearance than the agent needs, and detours would come out too long.
        path_radius = max(agent_radius - self.cell_size / 2, 0.0)
        self.passable = (
            disc_free(heights, scene.cell_size, slots, points, path_radius).reshape(rows, cols).numpy()
        )
        self.graph = self._build_graph()
        _, labels = connected_components(self.graph, directed=False)
        labels = np.where(self.free.ravel(), labels, -1)
        counts = np.bincount(labels[labels >= 0])
        # The largest connected region of standing places: every episode starts and ends on it.
        self.island = (labels == counts.argmax()).reshape(rows, cols)

    def cell_centres(self, row, col) -> np.ndarray:
        row, col = np.broadcast_arrays(row, col)
        return np.stack([(col + 0.5) * self.cell_size, (row + 0.5) * self.cell_size], axis=-1)

    def cell_of(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, col) of the navigation cell containing each point [..., 2]."""
        col = np.floor(points[..., 0] / self.cell_size).astype(np.int64)
        row = np.floor(points[..., 1] / self.cell_size).astype(np.int64)
        return np.clip(row, 0, self.shape[0] - 1), np.clip(col, 0, self.shape[1] - 1)

    def _build_graph(self):
        rows, cols = self.shape
        free = self.passable
        index = np.arange(rows * cols).reshape(rows, cols)
        sources, targets, weights = [], [], []
        for dr, dc, crossed in EDGES:
            # pair (r, c) -> (r + dr, c + dc) for every r, c where both ends are inside the grid
            r0, r1 = 0, rows - dr
            c0, c1 = max(0, -dc), cols - max(0, dc)
            ok = free[r0:r1, c0:c1] & free[r0 + dr : r1 + dr, c0 + dc : c1 + dc]
            for cr, cc in crossed:
                ok &= free[r0 + cr : r1 + cr, c0 + cc : c1 + cc]
            sources.append(index[r0:r1, c0:c1][ok])
            targets.append(index[r0 + dr : r1 + dr, c0 + dc : c1 + dc][ok])
            weights.append(np.full(int(ok.sum()), np.hypot(dr, dc) * self.cell_size))
        n = rows * cols
        graph = coo_matrix(
            (np.concatenate(weights), (np.concatenate(sources), np.concatenate(targets))), shape=(n, n)
        )
        return graph.tocsr()

    def distance_field(self, row: int, col: int) -> np.ndarray:
        """Geodesic distance in metres from the centre of cell (row, col) to every cell centre; inf where
        unreachable."""
        source = row * self.shape[1] + col
        field = dijkstra(self.graph, directed=False, indices=source)
        return field.reshape(self.shape).astype(np.float32)
