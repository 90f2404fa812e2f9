"""The teacher of imitation: a shortest-path follower that walks straight lines.

navzoo.baselines.OracleAgent follows the local gradient of the scene's distance field, a shortest path on
an 8-connected grid. That is cheap and near-perfect by SPL, but it zigzags between the grid's 45-degree
directions (turn, forward, the opposite turn on 13% of its steps), and a learner cannot predict when from
what it sees. This teacher is as good (SPL 0.99 on val), and its actions come in runs that a policy can
learn.

On the CPU it runs as a numba kernel that walks each candidate segment only up to its first blocked point:
about 10,000 labels per second on one core, 17 times the tensor version, which computes the same labels
for every point of every segment and serves CUDA simulators.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit

from navzoo.sim import kernels
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT

DIRECTIONS = 72  # candidate headings, every 5 degrees
MARCH = 0.125  # metres between the points checked along a candidate segment
MARCHES = 32  # so segments reach 4 m
LOOKAHEAD = (0.25, 0.5, 1.0, 2.0, 4.0)  # segment lengths scored, metres
GOAL_SAMPLES = 64  # points checked on the straight line to the goal
STOP_MARGIN = 0.75  # it stops within this share of the success distance


class StraightLineOracle:
    """Shortest-path follower that walks straight lines: it heads for the point it can see (a straight,
    collision-free segment) from which the rest of the way to the goal is shortest.

    The distance field is a shortest path on an 8-connected grid, so following its local gradient would
    zigzag between the grid's 45-degree directions. Instead each candidate direction (every 5 degrees) is
    scored at several look-ahead distances along the segment the agent could walk without touching a
    wall: segment length plus the field's distance from its end. The goal itself wins when it is in
    sight. It keeps going straight while its heading is close enough to the best direction, so its actions
    come in runs (forward, forward, ..., a few turns at a corner): a teacher worth imitating.
    """

    def __init__(self, sim: BatchSim):
        self.sim = sim
        dev = sim.device
        self.angles = torch.arange(DIRECTIONS, device=dev) * (2 * math.pi / DIRECTIONS)
        self.units = torch.stack([torch.cos(self.angles), torch.sin(self.angles)], 1)
        self.marches = torch.arange(1, MARCHES + 1, device=dev) * MARCH
        self.ahead = torch.tensor([round(d / MARCH) - 1 for d in LOOKAHEAD], device=dev)
        self.goal_samples = torch.linspace(0, 1, GOAL_SAMPLES, device=dev)

    def actions(self) -> torch.Tensor:
        """The teacher's action [N] in every environment's current state (it needs no observations)."""
        return self.labels()[0]

    def labels(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(actions [N], bearings [N]): the teacher's action, and the direction of the way it takes relative
        to the agent's heading (radians in [-pi, pi), positive to the left), a denser target than the
        action for a learner to predict."""
        if self.sim.device.type == "cpu":
            return self._cpu_labels()
        return self.tensor_labels()

    def _cpu_labels(self) -> tuple[torch.Tensor, torch.Tensor]:
        sim, cfg = self.sim, self.sim.config
        pool = sim.pool
        out = np.empty(sim.num_envs, dtype=np.int64)
        bearings = np.empty(sim.num_envs, dtype=np.float32)
        _teacher_kernel(
            pool.atlas.heights.numpy(),
            np.float32(pool.cell_size),
            pool.fields.numpy(),
            np.float32(pool.nav_cell),
            sim.slot.numpy(),
            sim.pos.numpy(),
            sim.heading.numpy(),
            sim.goal.numpy(),
            sim.field.numpy(),
            self._forward_steps().numpy(),
            self.units.numpy(),
            self.angles.numpy(),
            self.marches.numpy(),
            self.ahead.numpy(),
            self.goal_samples.numpy(),
            np.float32(cfg.agent_radius),
            np.float32(cfg.success_distance),
            np.float32(math.radians(cfg.turn_angle)),
            round(cfg.forward_step / MARCH) - 1,
            out,
            bearings,
        )
        return torch.from_numpy(out), torch.from_numpy(bearings)

    def tensor_labels(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The same labels from tensor operations on every point at once (any device)."""
        sim, cfg = self.sim, self.sim.config
        n, dev = sim.num_envs, sim.device
        angles, units, marches, ahead = self.angles, self.units, self.marches, self.ahead
        # Is every point up to each march step navigable? [n, D, K]
        points = sim.pos[:, None, None, :] + units[None, :, None, :] * marches[None, None, :, None]
        envs = torch.arange(n, device=dev)
        free = sim.is_navigable(points.reshape(-1, 2), envs.repeat_interleave(points[0, ..., 0].numel()))
        visible = free.view(n, DIRECTIONS, MARCHES).cumprod(2).bool()
        # Cost of walking straight to each look-ahead point, then the field's way from there.
        ends = points[:, :, ahead]
        rest = sim.geodesic_distance(ends.reshape(-1, 2), envs.repeat_interleave(ends[0, ..., 0].numel()))
        cost = marches[ahead] + rest.view(ends.shape[:-1])
        cost = torch.where(visible[:, :, ahead], cost, math.inf).min(2).values  # [n, D]
        best = angles[cost.argmin(1)]
        # The goal in sight beats any look-ahead point.
        to_goal = sim.goal - sim.pos
        distance = to_goal.norm(dim=1)
        line = sim.pos[:, None] + to_goal[:, None] * self.goal_samples[None, :, None]
        in_sight = sim.is_navigable(line.reshape(-1, 2), envs.repeat_interleave(GOAL_SAMPLES))
        in_sight = in_sight.view(n, -1).all(1) & (distance <= MARCH * MARCHES)
        best = torch.where(in_sight, torch.atan2(to_goal[:, 1], to_goal[:, 0]), best)
        error = torch.remainder(best - sim.heading + math.pi, 2 * math.pi) - math.pi  # positive: turn left
        # Go straight while the heading is within three quarters of a turn of the best direction (at most 1%
        # longer), or, with the goal in sight, while walking on passes within half the success distance of
        # it; turning back and forth around the exact direction would cost steps and teach nothing.
        turn = math.radians(cfg.turn_angle)
        passes = (error.abs() < math.pi / 2) & (distance * torch.sin(error.abs()) <= cfg.success_distance / 2)
        straight = passes & in_sight | (error.abs() <= 0.75 * turn)
        # ... unless the way ahead is blocked where the heading lies between two candidate directions.
        heading_bin = torch.round(sim.heading / (2 * math.pi / DIRECTIONS)).long() % DIRECTIONS
        step_index = round(cfg.forward_step / MARCH) - 1
        straight = straight & visible[envs, heading_bin, step_index]
        action = torch.where(straight, MOVE_FORWARD, torch.where(error > 0, TURN_LEFT, TURN_RIGHT))
        # It stops within three quarters of the success distance, unless its next step is straight on and
        # ends nearer the goal: its stops lie well inside the success circle, not on its edge, where a
        # learner's stop would be a coin toss between success and failure.
        here = sim.geodesic_distance(sim.pos)
        nearer = sim.geodesic_distance(sim.pos + self._forward_steps()) < here
        stop = (here <= STOP_MARGIN * cfg.success_distance) & ~((action == MOVE_FORWARD) & nearer)
        return torch.where(stop, STOP, action), error

    def _forward_steps(self) -> torch.Tensor:
        """[N, 2] the displacement of a step forward from each environment's heading."""
        heading = self.sim.heading
        return torch.stack([torch.cos(heading), torch.sin(heading)], 1) * self.sim.config.forward_step


@njit(cache=True)
def _teacher_kernel(
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
    success_distance,
    turn,
    step_index,
    out,
    bearings,
):
    """StraightLineOracle.tensor_labels, one environment at a time, each segment walked only up to its
    first blocked point."""
    directions, steps = units.shape[0], marches.shape[0]
    visible = np.empty(directions, np.int64)  # free march points before the first blocked one
    pi, two_pi = np.float32(math.pi), np.float32(2 * math.pi)
    for i in range(pos.shape[0]):
        slot, f, x, y = slots[i], field[i], pos[i, 0], pos[i, 1]
        best_cost, best_direction = np.float32(np.inf), 0
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
                    end = kernels.geodesic(fields, f, nav_cell, x + ux * marches[j], y + uy * marches[j])
                    if marches[j] + end < best_cost:
                        best_cost, best_direction = marches[j] + end, d
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
        here = kernels.geodesic(fields, f, nav_cell, x, y)
        next_step = kernels.geodesic(fields, f, nav_cell, x + forward_steps[i, 0], y + forward_steps[i, 1])
        if here <= STOP_MARGIN * success_distance and not (action == MOVE_FORWARD and next_step < here):
            action = STOP
        out[i] = action
        bearings[i] = error
