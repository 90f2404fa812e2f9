"""Shortest ways on a seen map (navzoo.sim.seen_map): Dijkstra from the goal over the map's passable
navigation cells, joined by the navigation grid's 16 moves as navzoo.sim.navgrid joins them, and the check
that a planned way is still open after the map has grown. numba kernels, one environment's map at a time.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from navzoo.sim.navgrid import EDGES


def _moves() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The navigation grid's 16 moves both ways: (d_row, d_col) [16, 2], length in cells [16], the cells
    each crosses besides its ends [16, 2, 2] and how many [16]."""
    steps, lengths, crossed, counts = [], [], [], []
    for d_row, d_col, cells in EDGES:
        for sign in (1, -1):
            steps.append((sign * d_row, sign * d_col))
            lengths.append(math.hypot(d_row, d_col))
            padded = [(sign * r, sign * c) for r, c in cells] + [(0, 0)] * (2 - len(cells))
            crossed.append(padded)
            counts.append(len(cells))
    return (
        np.array(steps, np.int64),
        np.array(lengths, np.float32),
        np.array(crossed, np.int64),
        np.array(counts, np.int64),
    )


MOVES, MOVE_LENGTHS, MOVE_CROSSED, MOVE_CROSSED_COUNT = _moves()
# The moves come in three lengths (1, sqrt 2 and sqrt 5 cells): the planner keeps a queue for each.
_, MOVE_KIND = np.unique(MOVE_LENGTHS, return_inverse=True)


@njit(cache=True)
def plan_from_goal(
    passable,
    env,
    rows,
    cols,
    nav_cell,
    goal,
    agent,
    margin,
    fields,
    via,
    moves,
    lengths,
    kind,
    crossed,
    crossed_count,
    queue_starts,
    queue_keys,
    queue_nodes,
):
    """Dijkstra from the goal's navigation cell over the passable cells of map `env` (its scene's `rows` x
    `cols`; reset() set the padding's field to inf), joined by the 16 moves whose crossed cells are
    passable too, as NavGrid builds its graph. Returns the distance up to which the field is exact: it
    stops once the agent's cell (at `agent`) is settled and the next cell is more than `margin` farther,
    or inf when every reachable cell is settled. Cells beyond hold more than that bound (or inf).

    The moves come in three lengths, and each gets a first-in first-out queue: cells leave in order of
    distance, so the distances entering one queue never decrease, and the nearest cell waiting is at the
    head of one of the three. That is Dijkstra without a heap, with the same distances."""
    field, way = fields[env], via[env]
    for r in range(rows):
        for c in range(cols):
            field[r, c] = np.inf
            way[r, c] = -1
    heads, tails = queue_starts.copy(), queue_starts.copy()
    goal_row, goal_col = math.floor(goal[1] / nav_cell), math.floor(goal[0] / nav_cell)
    agent_cell = math.floor(agent[1] / nav_cell) * cols + math.floor(agent[0] / nav_cell)
    bound = np.float32(np.inf)
    field[goal_row, goal_col] = 0.0
    queue_keys[tails[0]], queue_nodes[tails[0]] = 0.0, goal_row * cols + goal_col
    tails[0] += 1
    while True:
        queue, distance = -1, np.float32(np.inf)
        for q in range(heads.shape[0]):
            if heads[q] < tails[q] and queue_keys[heads[q]] <= distance:
                queue, distance = q, queue_keys[heads[q]]
        if queue < 0:
            return np.float32(np.inf)
        if distance > bound:
            return bound
        index = queue_nodes[heads[queue]]
        heads[queue] += 1
        r, c = index // cols, index % cols
        if distance > field[r, c]:
            continue
        if index == agent_cell:
            bound = distance + margin
        for k in range(moves.shape[0]):
            rr, cc = r + moves[k, 0], c + moves[k, 1]
            if rr < 0 or rr >= rows or cc < 0 or cc >= cols:
                continue
            # Most neighbours are already nearer: compare first, check the move's cells only if it helps.
            through = distance + lengths[k] * nav_cell
            if not through < field[rr, cc] or not passable[env, rr, cc]:
                continue
            clear = True
            for j in range(crossed_count[k]):
                if not passable[env, r + crossed[k, j, 0], c + crossed[k, j, 1]]:
                    clear = False
            if clear:
                field[rr, cc] = through
                way[rr, cc] = k
                q = kind[k]
                queue_keys[tails[q]], queue_nodes[tails[q]] = through, rr * cols + cc
                tails[q] += 1


@njit(cache=True)
def ways_open(passable, via, envs, cells, moves, crossed, crossed_count):
    """SeenMap.intact: follow each cell's planned way back to the goal, checking every cell on it and every
    cell its moves cross."""
    cols = passable.shape[2]
    open_ways = np.zeros(envs.shape[0], np.bool_)
    for i in range(envs.shape[0]):
        env = envs[i]
        if cells[i] < 0:
            continue
        r, c = cells[i] // cols, cells[i] % cols
        ok = True
        while ok:
            k = via[env, r, c]
            if k < 0:
                break
            ok = passable[env, r, c]
            r, c = r - moves[k, 0], c - moves[k, 1]
            for j in range(crossed_count[k]):
                ok = ok and passable[env, r + crossed[k, j, 0], c + crossed[k, j, 1]]
        open_ways[i] = ok
    return open_ways
