"""Rewards and metrics of PointGoal, Flee and Explore, and the baseline agents."""

import math

import pytest
import torch

from navzoo.agents.baselines import make_baseline
from navzoo.evaluation import evaluate, summarize
from navzoo.names import GOAL_SENSOR
from navzoo.sim import MOVE_FORWARD, STOP, TURN_LEFT, BatchSim, SimConfig


@pytest.fixture(scope="module")
def val_sim():
    sim = BatchSim(SimConfig(split="val", num_envs=200, sensors=()))
    yield sim
    sim.close()


def test_oracle_reaches_near_perfect_success_and_spl_on_val(val_sim):
    results = evaluate(val_sim, make_baseline("oracle", val_sim), len(val_sim.episodes), progress=False)
    assert len(results) == len(val_sim.episodes) == 600
    good = [r.success == 1.0 and r.spl >= 0.95 for r in results]
    assert sum(good) / len(good) >= 0.95
    summary = summarize(results)
    assert summary["success"] >= 0.98 and summary["spl"] >= 0.95


def test_baselines_are_ordered_as_in_ddppo_table_2(val_sim):
    spl = {
        name: summarize(evaluate(val_sim, make_baseline(name, val_sim), 64, progress=False))["spl"]
        for name in ("random", "forward-only", "goal-follower")
    }
    assert spl["random"] < 0.1 and spl["forward-only"] < 0.1
    assert spl["goal-follower"] >= spl["forward-only"]


def test_pointgoal_rewards_follow_geodesic_progress_and_terminal_spl():
    sim = BatchSim(SimConfig(split="val", num_envs=8, sensors=()))
    oracle = make_baseline("oracle", sim)
    obs = sim.reset()
    start = sim.geodesic_distance(sim.pos).clone()
    total = torch.zeros(8)
    finished = torch.zeros(8, dtype=torch.bool)
    steps = torch.zeros(8)
    final = {}
    for _ in range(500):
        before = sim.geodesic_distance(sim.pos).clone()
        obs, reward, done, info = sim.step(oracle.act(obs, None))
        live = ~finished
        if "episode" in info:
            after = torch.where(done, info["episode"]["distance_to_goal"], sim.geodesic_distance(sim.pos))
        else:
            after = sim.geodesic_distance(sim.pos)
        shaped = -(after - before) - 0.01
        terminal = reward - shaped
        # no terminal bonus before the end; 2.5 * SPL on the stop that ends the episode
        assert torch.allclose(terminal[live & ~done], torch.zeros(1), atol=1e-4)
        total += torch.where(live, reward, 0.0)
        steps += live.float()
        for i in torch.nonzero(done & live).squeeze(1).tolist():
            final[i] = {k: float(v[i]) for k, v in info["episode"].items() if v.dim() == 1}
            assert math.isclose(terminal[i].item(), 2.5 * final[i]["spl"], abs_tol=1e-4)
        finished |= done
        if finished.all():
            break
    for i, m in final.items():
        expected = -(m["distance_to_goal"] - start[i].item()) - 0.01 * steps[i].item() + 2.5 * m["spl"]
        assert math.isclose(total[i].item(), expected, abs_tol=1e-3)
        assert m["success"] == 1.0 and m["spl"] > 0.9
    assert len(final) == 8


def test_stopping_far_from_the_goal_scores_zero():
    sim = BatchSim(SimConfig(split="val", num_envs=4, sensors=()))
    sim.reset()
    assert (sim.geodesic_distance(sim.pos) > 0.2).all()
    _, reward, done, info = sim.step(torch.full((4,), STOP))
    assert done.all()
    assert (info["episode"]["success"] == 0).all() and (info["episode"]["spl"] == 0).all()
    assert torch.allclose(reward, torch.full((4,), -0.01))


def test_spl_of_a_zero_length_shortest_path_walked_exactly_is_success_not_nan():
    """A start at the goal is refused when episodes are loaded; should one still occur (l = p = 0),
    habitat's l / max(l, p) is 0/0. The agent walked the shortest path exactly: SPL is its success."""
    sim = BatchSim(SimConfig(split="val", num_envs=1, sensors=(), scene_families=("apartment-s",)))
    sim.reset()
    sim.pos[:] = sim.goal  # the start at the goal, as a degenerate episode has it
    sim.task.begin(sim, torch.arange(1))
    sim.start_geodesic[:] = sim.geodesic
    assert float(sim.start_geodesic[0]) == 0.0
    _, reward, done, info = sim.step(torch.full((1,), STOP))
    assert done.all() and info["episode"]["success"].tolist() == [1.0]
    assert info["episode"]["spl"].tolist() == [1.0]
    assert math.isclose(float(reward[0]), 2.5 - 0.01, abs_tol=1e-6)
    sim.close()


def test_episode_ends_at_the_step_limit_without_success():
    sim = BatchSim(SimConfig(num_envs=2, sensors=(), max_episode_steps=5))
    sim.reset()
    for step in range(5):
        _, _, done, info = sim.step(torch.full((2,), TURN_LEFT))
        assert done.all() == (step == 4)
    assert info["truncated"].all() and (info["episode"]["success"] == 0).all()
    assert (info["episode"]["num_steps"] == 5).all()


def test_flee_reward_is_five_times_normalised_geodesic_gain():
    sim = BatchSim(SimConfig(task="flee", num_envs=8, sensors=(), seed=2))
    obs = sim.reset()
    assert GOAL_SENSOR not in obs
    start = sim.pos.clone()
    scale = sim.pool.field_max[sim.field]
    total = torch.zeros(8)
    for _ in range(30):
        _, reward, _, _ = sim.step(torch.full((8,), MOVE_FORWARD))
        total += reward
    distance = sim.geodesic_distance(sim.pos)
    assert torch.allclose(total, 5 * distance / scale, atol=1e-4)
    assert (distance >= (sim.pos - start).norm(dim=1) - 1e-4).all()
    assert (total > 0).any()


def test_explore_rewards_newly_visited_one_metre_cells():
    sim = BatchSim(SimConfig(task="explore", num_envs=8, sensors=(), seed=4))
    sim.reset()
    total = torch.zeros(8)
    for _ in range(40):
        _, reward, _, _ = sim.step(torch.full((8,), MOVE_FORWARD))
        assert set(reward.unique().tolist()) <= {0.0, 0.25}
        total += reward
    # 0.25 per cell entered after the first one, so the count of visited cells is 1 + total / 0.25
    assert torch.allclose(sim.visited.flatten(1).sum(1).float(), 1 + total / 0.25)
    _, _, _done, info = sim.step(torch.full((8,), STOP))
    assert torch.allclose(info["episode"]["visited_cells"], 1 + total / 0.25)


def _habitat_pointgoal(position, rotation, goal) -> tuple[float, float]:
    """habitat-lab's PointGoalSensor (nav.py `_compute_pointgoal`, POLAR, 2D), transcribed: the goal rotated
    into the agent's frame by the inverse of its yaw quaternion [x, y, z, w], then
    `rho, phi = cartesian_to_polar(-d_z, d_x)` and `[rho, -phi]`."""
    _, y, _, w = rotation
    yaw = 2 * math.atan2(y, w)
    dx, dz = goal[0] - position[0], goal[2] - position[2]
    x = dx * math.cos(yaw) - dz * math.sin(yaw)  # R_y(-yaw) applied to (dx, dz)
    z = dx * math.sin(yaw) + dz * math.cos(yaw)
    return math.hypot(-z, x), -math.atan2(x, -z)


def test_the_gps_compass_bearing_is_habitat_s_mirrored():
    """navzoo's bearing is positive to the agent's right, habitat-lab's to its left; the distance is the
    same. navzoo.zoo.habitat_checkpoints negates the weights on the bearing when it converts."""
    from navzoo.sim.episodes import heading_to_quaternion, to_habitat_position

    sim = BatchSim(SimConfig(split="val", num_envs=6, sensors=()))
    reading = sim.reset()[GOAL_SENSOR]
    for i in range(sim.num_envs):
        rho, phi = _habitat_pointgoal(
            to_habitat_position(sim.pos[i].tolist()),
            heading_to_quaternion(float(sim.heading[i])),
            to_habitat_position(sim.goal[i].tolist()),
        )
        assert reading[i, 0].item() == pytest.approx(rho, abs=1e-5)
        assert reading[i, 1].item() == pytest.approx(-phi, abs=1e-5)
    # A goal to the left (counter-clockwise of the heading) reads negative in navzoo.
    heading = float(sim.heading[0])
    sim.goal[0] = sim.pos[0] + torch.tensor([-math.sin(heading), math.cos(heading)])
    assert sim.task.observations(sim, slice(0, 1))[GOAL_SENSOR][0, 1].item() == pytest.approx(-math.pi / 2)
    sim.close()
