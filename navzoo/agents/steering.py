"""Straight-line steering over a distance field: the action that walks the shortest way to the goal in
straight runs (forward, forward, ..., a few turns at a corner).

Each candidate direction (every 5 degrees) is scored at several look-ahead distances along the segment the
agent could walk without touching a wall: segment length plus the field's distance from its end; the goal
itself wins when it is in sight. The map can be the scene itself (the imitation teacher,
navzoo.train.teacher) or a map an agent built from what it saw (the map-planner baseline).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from navzoo.sim import kernels
from navzoo.sim.config import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT

DIRECTIONS = 72  # candidate headings, every 5 degrees
MARCH = 0.125  # metres between the points checked along a candidate segment
MARCHES = 32  # so segments reach 4 m
LOOKAHEAD = (0.25, 0.5, 1.0, 2.0, 4.0)  # segment lengths scored, metres
GOAL_SAMPLES = 64  # points checked on the straight line to the goal
STOP_MARGIN = 0.75  # it stops within this share of the success distance
# A straight walk of length d shortens the way to the goal by at most d, plus a stair's rise and the distance
# field's interpolation: metres of slack. The straight-line teacher leaves out a look-ahead point that claims
# more (it lies on floor the walk cannot reach straight, though within habitat's 0.5 m of the agent's floor:
# a stair flight's side, two steps up), and a goal in sight whose way is longer (it is on another storey).
REACH_SLACK = 0.25

# The candidates, as arrays for the kernel: headings [D] and their unit vectors [D, 2], the distances of the
# points checked along a segment [MARCHES], which of those are scored [len(LOOKAHEAD)], and the fractions of
# the way to the goal checked for a clear line [GOAL_SAMPLES].
ANGLES = (np.arange(DIRECTIONS) * (2 * math.pi / DIRECTIONS)).astype(np.float32)
UNITS = np.stack([np.cos(ANGLES), np.sin(ANGLES)], 1)
MARCH_POINTS = (np.arange(1, MARCHES + 1) * MARCH).astype(np.float32)
AHEAD = np.array([round(d / MARCH) - 1 for d in LOOKAHEAD], np.int64)
GOAL_FRACTIONS = np.linspace(0, 1, GOAL_SAMPLES, dtype=np.float32)


def steer(
    heights,
    cell_size,
    fields,
    nav_cell,
    slots,
    field,
    pos,
    heading,
    goal,
    config,
    hop_radius: float | np.floating = 0.0,
):
    """(actions [N], bearings [N], costs [N], cells [N]) of the straight-line walk to `goal` [N, 2] from
    `pos` [N, 2] facing `heading` [N] (numpy), over map `heights[slots]` and distance field
    `fields[field]`; `config` is the simulator's SimConfig (agent radius, step, turn, success distance).
    See straight_line_actions."""
    forward_steps = (np.stack([np.cos(heading), np.sin(heading)], 1) * config.forward_step).astype(np.float32)
    out = np.empty(len(pos), np.int64)
    bearings = np.empty(len(pos), np.float32)
    costs = np.empty(len(pos), np.float32)
    cells = np.empty(len(pos), np.int64)
    straight_line_actions(
        heights,
        np.float32(cell_size),
        fields,
        np.float32(nav_cell),
        slots,
        pos,
        heading,
        goal,
        field,
        forward_steps,
        UNITS,
        ANGLES,
        MARCH_POINTS,
        AHEAD,
        GOAL_FRACTIONS,
        np.float32(config.agent_radius),
        np.float32(hop_radius),
        np.float32(config.success_distance),
        np.float32(math.radians(config.turn_angle)),
        round(config.forward_step / MARCH) - 1,
        out,
        bearings,
        costs,
        cells,
    )
    return out, bearings, costs, cells


@njit(cache=True)
def straight_line_actions(
    heights,
    cell_size,
    fields,
    nav_cell,
    slots,
    pos,
    heading,
    goal,
    field,
    forward_steps,
    units,
    angles,
    marches,
    ahead,
    goal_samples,
    radius,
    hop_radius,
    success_distance,
    turn,
    step_index,
    out,
    bearings,
    costs,
    cells,
):
    """The straight-line walk's action [N] into `out`, its bearing error [N] (radians, positive to the
    left) into `bearings`, the cost of the best look-ahead point [N] (metres to it plus the field's
    distance from it; inf where none is reachable) into `costs` and the field's cell that distance came
    through (row * cols + col, -1 if none) into `cells`, one environment at a time, each segment walked
    only up to its first blocked point (navzoo.train.teacher's tensor_labels computes the same for every
    point at once).

    `heights` [P, rows, cols] and `fields` [F, rows', cols'] are any maps and distance fields of them (the
    scenes themselves, or maps an agent has built), `slots` and `field` index them per environment.
    `hop_radius` > 0 checks the hops of distance look-ups on a partial map (see kernels.geodesic)."""
    directions, steps = units.shape[0], marches.shape[0]
    visible = np.empty(directions, np.int64)  # free march points before the first blocked one
    pi, two_pi = np.float32(math.pi), np.float32(2 * math.pi)
    for i in range(pos.shape[0]):
        slot, f, x, y = slots[i], field[i], pos[i, 0], pos[i, 1]
        best_cost, best_direction, best_cell = np.float32(np.inf), 0, -1
        for d in range(directions):
            ux, uy = units[d, 0], units[d, 1]
            k = 0
            while k < steps and kernels.disc_free(
                heights, cell_size, slot, x + ux * marches[k], y + uy * marches[k], radius
            ):
                k += 1
            visible[d] = k
            for j in ahead:
                if j < k:
                    ex, ey = x + ux * marches[j], y + uy * marches[j]
                    end, cell = kernels.geodesic_via(
                        fields,
                        f,
                        nav_cell,
                        ex,
                        ey,
                        heights,
                        cell_size,
                        slot,
                        hop_radius,
                        marches[j],
                        best_cost,
                    )
                    if marches[j] + end < best_cost:
                        best_cost, best_direction, best_cell = marches[j] + end, d, cell
        best = angles[best_direction]
        to_x, to_y = goal[i, 0] - x, goal[i, 1] - y
        distance = np.float32(math.sqrt(to_x * to_x + to_y * to_y))
        in_sight = distance <= marches[steps - 1]
        for s in goal_samples:
            if not in_sight:
                break
            in_sight = kernels.disc_free(heights, cell_size, slot, x + to_x * s, y + to_y * s, radius)
        if in_sight:
            best = np.float32(math.atan2(to_y, to_x))
        shifted = best - heading[i] + pi
        error = shifted - two_pi * math.floor(shifted / two_pi) - pi  # torch.remainder's sign convention
        passes = abs(error) < math.pi / 2 and distance * math.sin(abs(error)) <= success_distance / 2
        straight = (passes and in_sight) or abs(error) <= 0.75 * turn
        heading_bin = int(np.rint(heading[i] / np.float32(2 * math.pi / directions))) % directions
        straight = straight and visible[heading_bin] > step_index
        action = MOVE_FORWARD if straight else (TURN_LEFT if error > 0 else TURN_RIGHT)
        here = kernels.geodesic(fields, f, nav_cell, x, y, heights, cell_size, slot, hop_radius)
        nx, ny = x + forward_steps[i, 0], y + forward_steps[i, 1]
        next_step = kernels.geodesic(fields, f, nav_cell, nx, ny, heights, cell_size, slot, hop_radius)
        if here <= STOP_MARGIN * success_distance and not (action == MOVE_FORWARD and next_step < here):
            action = STOP
        out[i] = action
        bearings[i] = error
        costs[i] = best_cost
        cells[i] = best_cell
