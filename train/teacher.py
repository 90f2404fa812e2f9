"""The teachers of imitation: a shortest-path follower that walks straight lines over the scene's own
distance field (it knows the whole map), the map-planner, which walks the same way over a map of what
the agent has seen, and a trained policy (policy distillation).

Each labels every step with (action, bearing) through `labels(observations, first)`, is told the actions
the simulator was given (`taken`), and keeps what a restart needs (`state_dict`).

navzoo.agents.baselines.OracleAgent (the `oracle` baseline) follows the local gradient of the scene's
distance field, a shortest path on an 8-connected grid. That is cheap and near-perfect by SPL, but it
zigzags between the grid's 45-degree directions (turn, forward, the opposite turn), and a learner cannot
predict when from what it sees. The straight-line teacher is as good by SPL, and its actions come in runs
that a policy can learn.

On the CPU it runs as a numba kernel that walks each candidate segment only up to its first blocked point,
many times faster than the tensor version, which computes the same labels for every point of every segment
and serves CUDA simulators (benchmarks/teacher_throughput.py measures the teachers' labels per second).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from navzoo.agents.baselines import MapPlannerAgent
from navzoo.agents.policy_agent import PolicyAgent, check_sim_config
from navzoo.agents.steering import (
    AHEAD,
    ANGLES,
    DIRECTIONS,
    GOAL_FRACTIONS,
    GOAL_SAMPLES,
    MARCH,
    MARCH_POINTS,
    MARCHES,
    REACH_SLACK,
    STOP_MARGIN,
    UNITS,
    steer,
)
from navzoo.errors import ConfigError, NavzooError
from navzoo.models import ActorCritic
from navzoo.models.weights import ModelConfig
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from navzoo.train.config_blocks import ImitationConfig
from navzoo.zoo.loader import load, load_model_config


class StraightLineTeacher:
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
        self.angles = torch.from_numpy(ANGLES).to(dev)
        self.units = torch.from_numpy(UNITS).to(dev)
        self.marches = torch.from_numpy(MARCH_POINTS).to(dev)
        self.ahead = torch.from_numpy(AHEAD).to(dev)
        self.goal_samples = torch.from_numpy(GOAL_FRACTIONS).to(dev)

    def actions(self) -> torch.Tensor:
        """The teacher's action [N] in every environment's current state (it needs no observations)."""
        return self.labels()[0]

    def labels(self, observations=None, first=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(actions [N], bearings [N]): the teacher's action, and the direction of the way it takes relative
        to the agent's heading (radians in [-pi, pi), positive to the left), a denser target than the
        action for a learner to predict. It reads the simulator's state; observations and episode starts
        are not needed. On scanned meshes the tensor version asks the simulator's navmesh (the numba
        kernel walks navzoo's own scene grids)."""
        if self.sim.device.type == "cpu" and self.sim.meshes is None:
            return self._cpu_labels()
        return self.tensor_labels()

    def taken(self, actions: torch.Tensor) -> None:
        """Nothing to remember: this teacher sees the whole scene at every step."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def _cpu_labels(self) -> tuple[torch.Tensor, torch.Tensor]:
        sim, pool = self.sim, self.sim.pool
        actions, bearings, _, _ = steer(
            pool.atlas.heights.numpy(),
            pool.cell_size,
            pool.fields.numpy(),
            pool.nav_cell,
            sim.slot.numpy(),
            sim.field.numpy(),
            sim.pos.numpy(),
            sim.heading.numpy(),
            sim.goal.numpy(),
            sim.config,
        )
        return torch.from_numpy(actions), torch.from_numpy(bearings)

    def tensor_labels(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The same labels from tensor operations on every point at once (any device, any scene source: it
        asks the simulator which points are navigable and how far each is from the goal)."""
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
        rest = rest.view(ends.shape[:-1])
        here = sim.geodesic_distance(sim.pos)
        reachable = visible[:, :, ahead] & (rest >= here[:, None, None] - marches[ahead] - REACH_SLACK)
        cost = torch.where(reachable, marches[ahead] + rest, math.inf).min(2).values  # [n, D]
        best = angles[cost.argmin(1)]
        # The goal in sight beats any look-ahead point.
        to_goal = sim.goal - sim.pos
        distance = to_goal.norm(dim=1)
        line = sim.pos[:, None] + to_goal[:, None] * self.goal_samples[None, :, None]
        in_sight = sim.is_navigable(line.reshape(-1, 2), envs.repeat_interleave(GOAL_SAMPLES))
        in_sight = in_sight.view(n, -1).all(1) & (distance <= MARCH * MARCHES)
        # ... and the way there is the straight line: not a goal on the storey above (scanned meshes).
        in_sight &= here <= distance + REACH_SLACK
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
        nearer = sim.geodesic_distance(sim.pos + self._forward_steps()) < here
        stop = (here <= STOP_MARGIN * cfg.success_distance) & ~((action == MOVE_FORWARD) & nearer)
        return torch.where(stop, STOP, action), error

    def _forward_steps(self) -> torch.Tensor:
        """[N, 2] the displacement of a step forward from each environment's heading."""
        heading = self.sim.heading
        return torch.stack([torch.cos(heading), torch.sin(heading)], 1) * self.sim.config.forward_step


class MapPlannerTeacher:
    """A teacher that knows only what the learner has seen: the map-planner (navzoo.agents.baselines),
    which maps the walls the depth camera shows, counts unseen space as free, and walks the shortest way it
    can believe in, in straight runs. Its choices depend on the episode so far, not on walls nobody has seen
    yet, so a recurrent learner can learn them, where the shortest-path teacher's turns towards a door it
    cannot see yet a learner can only guess at. It needs depth images (the trainer renders them for it when
    the learner sees RGB) and runs on the CPU."""

    def __init__(self, sim: BatchSim):
        self.planner = MapPlannerAgent(sim)

    def labels(self, observations: dict[str, torch.Tensor], first: torch.Tensor):
        """(actions [N], bearings [N]) as StraightLineTeacher.labels gives them, after mapping the depth
        images seen now; `first` [N] marks episodes that just began."""
        actions, bearings = self.planner.plan(observations["depth"], first)
        return torch.from_numpy(actions), torch.from_numpy(bearings)

    def seen_map(self, size: int, cell: float) -> torch.Tensor:
        """[N, size * size]: the walls seen so far this episode around the agent, in its frame
        (SeenMap.egocentric), as mapped by the last labels()."""
        sim = self.planner.sim
        grid = self.planner.map.egocentric(sim.pos.numpy(), sim.heading.numpy(), size, cell)
        return torch.from_numpy(grid.reshape(len(grid), -1))

    def taken(self, actions: torch.Tensor) -> None:
        """Record the actions the simulator is given (the learner's or the teacher's): a forward step that
        goes nowhere marks what it hit."""
        self.planner.map.record_actions(actions.numpy() == MOVE_FORWARD)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.planner.map.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore the maps; without any (a checkpoint of a run that had another teacher), start each
        environment's map afresh, as if its episode had just begun."""
        seen = self.planner.map
        if state:
            seen.load_state_dict(state)
        elif not self.planner.shares_map:  # a shared map is the simulator's, restored with it
            seen.reset(np.arange(len(seen.solid)))


class PolicyTeacher:
    """A trained policy as the teacher (policy distillation, Rusu et al. 2016): it sees the simulator's
    cameras, carries its recurrent state and previous action through each episode as an evaluation does,
    and labels each step with an action drawn from its distribution, which it also gives (`probs`): the
    cloning loss is the cross-entropy to that distribution, so the learner learns how sure the teacher is,
    not only its likeliest action. It teaches a learner of another architecture, e.g. one
    habitat-baselines can run, or of other cameras, e.g. RGB from a depth teacher. It has no bearing."""

    def __init__(self, sim: BatchSim, model: str):
        policy = load_teacher(model, device=str(sim.device))
        try:
            check_sim_config(policy.config, sim.config, f"the teacher {model}", policy.task)
        except ConfigError as err:
            why = f"a PointGoal model the run's simulator renders for ({err})"
            raise ConfigError("imitation.teacher_model", model, why) from None
        # Seeded from the trainer's generator, which is seeded per worker; restarts restore the draws.
        seed = int(torch.randint(2**62, ()).item())
        self.agent = PolicyAgent(policy, sim.num_envs, seed=seed)
        self.fresh = False  # whether the next labels treat every episode as just begun

    def labels(self, observations: dict[str, torch.Tensor], first: torch.Tensor):
        """(actions [N] drawn from the teacher's distribution, NaN bearings [N]); `first` [N] marks episodes
        that just began (its memory is reset there)."""
        if self.fresh:  # restored without memory: every episode starts afresh for the teacher
            first, self.fresh = torch.ones_like(first), False
        actions = self.agent.act(observations, first)
        return actions, torch.full(actions.shape, math.nan, device=actions.device)

    def probs(self) -> torch.Tensor:
        """[N, A]: the distribution the last labels were drawn from."""
        assert self.agent.last_action_probs is not None, "labels() first"
        return self.agent.last_action_probs

    def taken(self, actions: torch.Tensor) -> None:
        """The teacher's previous action is the one the simulator was given, as it would be when it drives."""
        self.agent.prev_actions = actions.to(self.agent.device)

    def state_dict(self) -> dict[str, torch.Tensor]:
        agent = self.agent
        memory = {"hidden": agent.hidden, "prev_actions": agent.prev_actions}
        return {
            **{k: v.to("cpu", copy=True) for k, v in memory.items()},
            "draws": agent.generator.get_state(),
        }

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore the teacher's memory and draws; without them (a checkpoint of a run that had another
        teacher) every episode's memory starts afresh, as if it had just begun."""
        if "hidden" not in state:
            self.fresh = True
            return
        agent = self.agent
        agent.hidden = state["hidden"].to(agent.device)
        agent.prev_actions = state["prev_actions"].to(agent.device)
        agent.generator.set_state(state["draws"])


def load_teacher(model: str, device: str = "cpu") -> ActorCritic:
    """The policy teacher `model`; ConfigError naming imitation.teacher_model where it cannot be loaded."""
    try:
        return load(model, device=device)
    except (NavzooError, OSError) as err:
        raise _teacher_refusal(model, err) from None


@functools.cache
def policy_teacher_config(model: str) -> ModelConfig:
    """The architecture and cameras of the policy teacher `model`, for the config's checks before training:
    its config checked against its weights' header, so a teacher that cannot load is refused before the
    run starts, and its tensors are read once, by the trainer."""
    try:
        return load_model_config(model)
    except (NavzooError, OSError) as err:
        raise _teacher_refusal(model, err) from None


def _teacher_refusal(model: str, err: Exception) -> ConfigError:
    return ConfigError("imitation.teacher_model", model, f"a trained model to distil ({err})")


def make_teacher(sim: BatchSim, config: ImitationConfig):
    """The teacher `config.teacher` names, labelling `sim`'s environments."""
    if config.teacher == "policy":
        assert config.teacher_model is not None  # ImitationConfig.validate
        return PolicyTeacher(sim, config.teacher_model)
    return TEACHERS[config.teacher](sim)


# The teachers that need only the simulator. The cameras each reads besides the simulator's state are the
# config's (navzoo.train.config_blocks.TEACHER_SENSORS).
TEACHERS = {"shortest-path": StraightLineTeacher, "map-planner": MapPlannerTeacher}
