"""Collisions and sliding of the agent's disc."""

import math

import numpy as np
import pytest
import torch

from navzoo.sim import BatchSim, SimConfig, kernels
from navzoo.sim.physics import disc_free, move
from tests.support import box_room

RADIUS = 0.1


def _move(heights, pos, delta):
    h = torch.from_numpy(heights)[None]
    slots = torch.zeros(len(pos), dtype=torch.long)
    return move(
        h,
        0.25,
        slots,
        torch.tensor(pos, dtype=torch.float32),
        torch.tensor(delta, dtype=torch.float32),
        RADIUS,
    )


def test_moving_into_a_wall_stops_at_contact(room):
    pos = [[2.0, 2.0]]
    for _ in range(10):
        new, collided = _move(room, pos, [[0.25, 0.0]])
        pos = new.tolist()
    assert collided.item()
    assert math.isclose(pos[0][0], 3.75 - RADIUS, abs_tol=1e-4)  # wall face at x = 3.75


def test_blocked_diagonal_move_slides_along_the_wall(room):
    start = [[3.75 - RADIUS, 2.0]]
    angle = math.radians(30)
    new, collided = _move(room, start, [[0.25 * math.cos(angle), 0.25 * math.sin(angle)]])
    assert collided.item()
    assert math.isclose(new[0, 0].item(), 3.75 - RADIUS, abs_tol=1e-4)
    assert math.isclose(new[0, 1].item(), 2.0 + 0.25 * math.sin(angle), abs_tol=1e-4)


def test_thin_wall_is_never_crossed():
    heights = box_room()
    heights[1:-1, 8] = 2.5  # wall across the room at x in [2.0, 2.25]
    rng = np.random.default_rng(0)
    pos = np.stack([rng.uniform(0.4, 1.85, 256), rng.uniform(0.4, 3.6, 256)], 1)
    for _ in range(40):
        angle = rng.uniform(-math.pi, math.pi, 256)
        delta = 0.25 * np.stack([np.cos(angle), np.sin(angle)], 1)
        pos = _move(heights, pos, delta)[0].numpy()
        assert (pos[:, 0] <= 2.0 - RADIUS + 1e-4).all()


def test_agents_in_generated_scenes_stay_in_free_space():
    sim = BatchSim(SimConfig(num_envs=64, sensors=(), seed=3, max_episode_steps=1000))
    sim.reset()
    generator = torch.Generator().manual_seed(0)
    collisions = 0
    for _ in range(150):
        actions = torch.randint(1, 4, (64,), generator=generator)
        actions[actions == 3] = 1  # mostly forward, so that walls are met often
        _, _, _, info = sim.step(actions)
        collisions += int(info["collided"].sum())
        assert disc_free(sim.pool.atlas.heights, 0.25, sim.slot, sim.pos, RADIUS).all()
    assert collisions > 0
    assert (sim.collisions >= 0).all()


@pytest.mark.parametrize("family", ["apartment-s", "apartment", "office", "office-l"])
def test_cpu_kernel_moves_the_agents_as_the_tensor_version(family):
    """The numba kernel (BatchSim on the CPU) and the tensor version (any device) give the same positions and
    collision flags, bit for bit, for moves of every length and direction from positions along real walks,
    about half of them blocked."""
    sim = BatchSim(SimConfig(num_envs=256, sensors=(), scene_families=(family,), seed=4))
    sim.reset()
    heights, generator = sim.pool.atlas.heights, torch.Generator().manual_seed(1)
    blocked = 0
    for _ in range(40):
        angle = torch.rand(256, generator=generator) * 2 * math.pi
        length = torch.rand(256, generator=generator) * 0.6
        delta = torch.stack([torch.cos(angle), torch.sin(angle)], 1) * length[:, None]
        delta[:16, 1] = 0  # moves along one axis, and none at all
        delta[:8, 0] = 0
        expected = move(heights, sim.pool.cell_size, sim.slot, sim.pos, delta, RADIUS)
        moved = kernels.move(heights, sim.pool.cell_size, sim.slot, sim.pos, delta, RADIUS)
        assert torch.equal(moved[0], expected[0])
        assert torch.equal(moved[1], expected[1])
        blocked += int(expected[1].sum())
        forward_mostly = torch.randint(1, 4, (256,), generator=generator).clamp(max=2) % 2 + 1
        sim.step(forward_mostly)
    assert blocked > 1000
