"""The teacher of imitation: a shortest-path follower that walks straight lines.

navzoo.baselines.OracleAgent follows the local gradient of the scene's distance field, a shortest path on
an 8-connected grid. That is cheap and near-perfect by SPL, but it zigzags between the grid's 45-degree
directions (turn, forward, the opposite turn on 13% of its steps), and a learner cannot predict when from
what it sees. This teacher costs about 20 times more per step and is as good (SPL 0.99 on val), and its
actions come in runs that a policy can learn.
"""

from __future__ import annotations

import math

import torch

from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT

DIRECTIONS = 72  # candidate headings, every 5 degrees
MARCH = 0.125  # metres between the points checked along a candidate segment
MARCHES = 32  # so segments reach 4 m
LOOKAHEAD = (0.25, 0.5, 1.0, 2.0, 4.0)  # segment lengths scored, metres
GOAL_SAMPLES = 64  # points checked on the straight line to the goal


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

    def actions(self) -> torch.Tensor:
        """The teacher's action [N] in every environment's current state (it needs no observations)."""
        sim, cfg = self.sim, self.sim.config
        n, dev = sim.num_envs, sim.device
        angles = torch.arange(DIRECTIONS, device=dev) * (2 * math.pi / DIRECTIONS)
        units = torch.stack([torch.cos(angles), torch.sin(angles)], 1)
        # Is every point up to each march step navigable? [n, D, K]
        marches = torch.arange(1, MARCHES + 1, device=dev) * MARCH
        points = sim.pos[:, None, None, :] + units[None, :, None, :] * marches[None, None, :, None]
        envs = torch.arange(n, device=dev)
        free = sim.is_navigable(points.reshape(-1, 2), envs.repeat_interleave(points[0, ..., 0].numel()))
        visible = free.view(n, DIRECTIONS, MARCHES).cumprod(2).bool()
        # Cost of walking straight to each look-ahead point, then the field's way from there.
        ahead = torch.tensor([round(d / MARCH) - 1 for d in LOOKAHEAD], device=dev)
        ends = points[:, :, ahead]
        rest = sim.geodesic_distance(ends.reshape(-1, 2), envs.repeat_interleave(ends[0, ..., 0].numel()))
        cost = marches[ahead] + rest.view(ends.shape[:-1])
        cost = torch.where(visible[:, :, ahead], cost, math.inf).min(2).values  # [n, D]
        best = angles[cost.argmin(1)]
        # The goal in sight beats any look-ahead point.
        to_goal = sim.goal - sim.pos
        distance = to_goal.norm(dim=1)
        samples = torch.linspace(0, 1, GOAL_SAMPLES, device=dev)
        line = sim.pos[:, None] + to_goal[:, None] * samples[None, :, None]
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
        here = sim.geodesic_distance(sim.pos)
        return torch.where(here <= cfg.success_distance, STOP, action)
