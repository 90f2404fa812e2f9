"""The non-learning PointGoal agents of DD-PPO's Table 2 (from Savva et al. 2019), the oracle, and a
classical map-and-plan agent.

Random, forward-only and goal-follower stop when the GPS+Compass says the goal is within the success
distance, as habitat-baselines' simple agents do. The oracle follows the geodesic shortest path using the
simulator's distance field (it sees the map), and is the upper bound SPL is measured against. The
map-planner sees only what its depth camera shows, maps it and plans on the map, as classical navigation
pipelines do.
"""

import math

import numpy as np
import torch

from navzoo.agents.draws import keyed_uniform
from navzoo.agents.steering import steer
from navzoo.errors import ConfigError
from navzoo.names import GOAL_BASELINES, GOAL_SENSOR
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from navzoo.sim.seen_map import NEAR_GOAL, PLAN_MARGIN, SeenMap
from navzoo.tasks import get_task

ORACLE_DIRECTIONS = 72  # candidate headings the oracle compares, every 5 degrees


class BaselineAgent:
    """Maps a batch of observations to a batch of actions."""

    name = "baseline"

    def __init__(self, sim: BatchSim, seed: int = 0):
        self.sim = sim
        self.seed = seed
        self.generator = torch.Generator(device="cpu").manual_seed(seed)

    def act(self, obs: dict[str, torch.Tensor], first: torch.Tensor) -> torch.Tensor:
        """Actions [N] for observations; `first` [N] marks environments whose episode just began."""
        raise NotImplementedError

    def _goal_reached(self, obs) -> torch.Tensor:
        if not self.sim.task.has_goal:  # Flee and Explore have no goal: these agents never stop
            return torch.zeros(self.sim.num_envs, dtype=torch.bool, device=self.sim.device)
        return obs[GOAL_SENSOR][:, 0] <= self.sim.config.success_distance


class RandomAgent(BaselineAgent):
    """Moves forward, left or right with equal probability. Under `evaluate` each draw is keyed on the seed,
    the episode and the step (`keys`, see navzoo.evaluation), so an episode's moves do not depend on which
    environment runs it; without keys the draws come from the agent's generator."""

    name = "random"

    def act(self, obs, first, keys=None):
        if keys is None:
            uniform = torch.rand(self.sim.num_envs, generator=self.generator, dtype=torch.float64)
        else:
            uniform = keyed_uniform(self.seed, keys)
        # forward, left or right: each a third of [0, 1)
        moves = MOVE_FORWARD + (uniform.to(self.sim.device) * 3).long()
        return torch.where(self._goal_reached(obs), STOP, moves)


class ForwardOnlyAgent(BaselineAgent):
    name = "forward-only"

    def act(self, obs, first):
        return torch.where(self._goal_reached(obs), STOP, MOVE_FORWARD)


class GoalFollowerAgent(BaselineAgent):
    """Turns towards the goal direction given by the GPS+Compass, then moves forward."""

    name = "goal-follower"

    def act(self, obs, first):
        phi = obs[GOAL_SENSOR][:, 1]  # positive: goal to the right
        half_turn = math.radians(self.sim.config.turn_angle) / 2
        action = torch.where(
            phi > half_turn, TURN_RIGHT, torch.where(phi < -half_turn, TURN_LEFT, MOVE_FORWARD)
        )
        return torch.where(self._goal_reached(obs), STOP, action)


class OracleAgent(BaselineAgent):
    """Shortest-path follower: heads for the point one step away that it would walk to straight and that is
    geodesically closest."""

    name = "oracle"

    def act(self, obs, first):
        return self.actions()

    def actions(self) -> torch.Tensor:
        """The oracle's action [N] in every environment's current state (it needs no observations)."""
        sim, cfg = self.sim, self.sim.config
        n = sim.num_envs
        angles = torch.arange(ORACLE_DIRECTIONS, device=sim.device) * (2 * math.pi / ORACLE_DIRECTIONS)
        offsets = torch.stack([torch.cos(angles), torch.sin(angles)], 1) * cfg.forward_step
        points = (sim.pos[:, None, :] + offsets[None]).reshape(-1, 2)
        envs = torch.arange(n, device=sim.device).repeat_interleave(ORACLE_DIRECTIONS)
        distance = sim.geodesic_distance(points, envs)
        distance = torch.where(sim.walks_straight(points, envs), distance, math.inf).reshape(
            n, ORACLE_DIRECTIONS
        )
        best = angles[distance.argmin(1)]
        error = torch.remainder(best - sim.heading + math.pi, 2 * math.pi) - math.pi  # positive: turn left
        half_turn = math.radians(cfg.turn_angle) / 2
        action = torch.where(
            error > half_turn, TURN_LEFT, torch.where(error < -half_turn, TURN_RIGHT, MOVE_FORWARD)
        )
        here = sim.geodesic_distance(sim.pos)
        return torch.where(here <= cfg.success_distance, STOP, action)


class MapPlannerAgent(BaselineAgent):
    """A classical agent: it maps the walls its depth camera shows (navzoo.sim.seen_map; unseen space
    counts as free), plans the shortest way to the goal on that map, and walks it in straight runs
    (navzoo.agents.steering), replanning whenever the map grows. It uses depth, its pose and the goal (what
    GPS+Compass gives) and the scene's bounding rectangle; nothing is learnt."""

    name = "map-planner"

    def __init__(self, sim: BatchSim, seed: int = 0):
        super().__init__(sim, seed)
        if sim.device.type != "cpu":
            raise ConfigError("device", str(sim.device), "cpu for the map-planner baseline (numba kernels)")
        if "depth" not in sim.config.sensors:
            raise ConfigError(
                "sensors", sim.config.sensors, "a list with 'depth': the map-planner maps what depth shows"
            )
        # With the seen_map sensor the simulator keeps this map itself, mapping each step as it goes.
        self.shares_map = sim.seen_map is not None
        self.map = SeenMap(sim) if sim.seen_map is None else sim.seen_map.map

    def act(self, obs, first):
        actions, _ = self.plan(obs["depth"], first)
        self.map.record_actions(actions == MOVE_FORWARD)
        return torch.from_numpy(actions)

    def plan(self, depth: torch.Tensor, first: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """(actions [N], bearings [N]) of the planner after it maps the depth images [N, H, W, 1] seen now;
        `first` [N] marks episodes that just began. The caller records which action was taken
        (self.map.record_actions), so that a forward step that went nowhere marks what it hit."""
        sim = self.sim
        pos, heading, goal = sim.pos.numpy(), sim.heading.numpy(), sim.goal.numpy()
        started = first.numpy()
        if not self.shares_map:
            self.map.reset(np.flatnonzero(started))
            self.map.observe(depth[..., 0].numpy(), pos, heading)
            self.map.bump(pos, heading)
        # A plan serves on while the agent stays well inside what it settled, and, once the map has grown,
        # while the way from the best look-ahead point is still open (walls only lengthen ways).
        must = started | self.map.stale(pos)
        self.map.replan(np.flatnonzero(must), goal, pos)
        steered = self._steer(np.arange(sim.num_envs), pos, heading, goal)
        actions, bearings, costs, cells = steered  # updated in place below
        grown = np.flatnonzero(self.map.grown & ~must)
        near = self.map.planned_distance(pos)[grown] < NEAR_GOAL
        closed = grown[near | ~self.map.intact(grown, cells[grown])]
        self._replan_and_steer(closed, PLAN_MARGIN, steered)
        # A plan that stopped short of the best way's cost may have missed it: plan those in full.
        self._replan_and_steer(np.flatnonzero(costs > self.map.bounds), np.inf, steered)
        return actions, bearings

    def _replan_and_steer(self, envs: np.ndarray, margin: float, steered: tuple) -> None:
        """Plan `envs` again with `margin` and write their steering into `steered`'s arrays."""
        if not len(envs):
            return
        sim = self.sim
        pos, heading, goal = sim.pos.numpy(), sim.heading.numpy(), sim.goal.numpy()
        self.map.replan(envs, goal, pos, margin)
        for whole, part in zip(steered, self._steer(envs, pos[envs], heading[envs], goal[envs]), strict=True):
            whole[envs] = part

    def _steer(self, envs, pos, heading, goal):
        return steer(
            self.map.solid,
            self.map.cell_size,
            self.map.fields,
            self.map.nav_cell,
            envs,
            envs,
            pos,
            heading,
            goal,
            self.sim.config,
            hop_radius=self.map.path_radius,
        )


BASELINES = {
    cls.name: cls for cls in (RandomAgent, ForwardOnlyAgent, GoalFollowerAgent, OracleAgent, MapPlannerAgent)
}

# Baselines that steer by the point goal (GOAL_BASELINES, from navzoo.names) run on PointGoal only; random
# and forward-only run on every task.


def make_baseline(name: str, sim: BatchSim, seed: int = 0) -> BaselineAgent:
    if name not in BASELINES:
        raise ConfigError("agent", name, tuple(BASELINES))
    check_baseline_task(name, sim.config.task)
    return BASELINES[name](sim, seed)


def check_baseline_task(name: str, task: str) -> None:
    """Raise ConfigError if baseline `name` needs the point goal and `task` has none."""
    if not get_task(task).has_goal and name in GOAL_BASELINES:
        raise ConfigError(
            "task",
            task,
            f"'pointnav' for the {name} baseline, which steers by the point goal; on {task} use random or "
            "forward-only (they run on every task)",
        )
