"""Imitation of the shortest-path teacher (navzoo.train.imitation): the loss on hand-computed cases, the
teacher's mixture schedule, an update that moves the policy towards the labels, and the trainer's loop."""

import dataclasses
import math

import pytest
import torch

import navzoo
from navzoo.agents.baselines import make_baseline
from navzoo.errors import ConfigError
from navzoo.evaluation import evaluate, summarize
from navzoo.models import GOAL_SENSOR
from navzoo.sim import MOVE_FORWARD, STOP, TURN_LEFT, BatchSim, SimConfig
from navzoo.train.config import load_config
from navzoo.train.config_blocks import ImitationConfig, PPOConfig
from navzoo.train.imitation import (
    DAgger,
    TeacherLabels,
    bearing_loss,
    coarse_depth,
    depth_loss,
    imitation_losses,
    inflection_weights,
    map_loss,
)
from navzoo.train.rollout import RolloutStorage
from navzoo.train.teacher import StraightLineTeacher
from tests.train.test_ppo import labelled_storage, tiny_policy

pytestmark = pytest.mark.usefixtures("one_thread")

CPU = torch.device("cpu")


def test_inflection_weights_hand_computed():
    # Two environments, four steps. Env 0: the teacher turns at t=2; env 1: a new episode starts at t=2.
    teacher_actions = torch.tensor([[1, 2], [1, 2], [3, 2], [3, 2]])
    masks = torch.tensor([[True, True], [True, True], [True, False], [True, True]])
    weights = inflection_weights(teacher_actions, masks, 4.0)
    assert weights.tolist() == [[1.0, 1.0], [1.0, 1.0], [4.0, 4.0], [1.0, 1.0]]
    # The first step of a sequence is an inflection only where an episode starts there.
    assert inflection_weights(teacher_actions, ~masks, 2.0)[0].tolist() == [2.0, 2.0]
    assert inflection_weights(teacher_actions, masks, 1.0).eq(1.0).all()


def test_imitation_losses_hand_computed():
    # One environment, two steps; actions stop, forward, left, right. The teacher goes forward, then stops.
    probs = torch.tensor([[[0.25, 0.5, 0.125, 0.125], [0.25, 0.25, 0.25, 0.25]]]).transpose(0, 1)
    teacher_actions = torch.tensor([[1], [0]])
    weights = torch.tensor([[1.0], [3.0]])
    values, returns = torch.tensor([[1.0], [2.0]]), torch.tensor([[0.0], [0.0]])
    losses = imitation_losses(probs.log(), teacher_actions, weights, values, returns, value_loss_coef=0.5)
    action = (math.log(2) + 3 * math.log(4)) / 4  # the weighted mean cross-entropy
    value = 0.5 * (1 + 4) / 2
    assert losses.action.item() == pytest.approx(action)
    assert losses.value.item() == pytest.approx(value)
    assert losses.total.item() == pytest.approx(action + 0.5 * value)
    assert losses.teacher_prob.item() == pytest.approx(0.375)
    # Only the first step goes on, where p(stop) = 1/4: -log(3/4), weighted into the total.
    assert losses.early_stop.item() == pytest.approx(-math.log(0.75))
    assert losses.early_stop_prob.item() == pytest.approx(0.25)
    weighted = imitation_losses(
        probs.log(), teacher_actions, weights, values, returns, 0.5, early_stop_weight=2.0
    )
    assert weighted.total.item() == pytest.approx(action + 2 * -math.log(0.75) + 0.5 * value)


def test_early_stop_loss_is_finite_when_the_policy_is_sure_to_stop():
    certain = torch.tensor([[[1.0, 0.0, 0.0, 0.0]]]).clamp(min=1e-30).log()

    def early_stop(teacher_action: int) -> float:
        zeros = torch.zeros(1, 1)
        teacher_actions = torch.tensor([[teacher_action]])
        return imitation_losses(
            certain, teacher_actions, torch.ones(1, 1), zeros, zeros, 0.5, 1.0
        ).early_stop.item()

    assert early_stop(1) == pytest.approx(-math.log(1e-6), rel=1e-3)
    assert early_stop(0) == 0.0  # no step goes on


def test_teacher_share_decays_linearly_and_decides_who_drives():
    sim = BatchSim(SimConfig(split="train", num_envs=64, sensors=()))
    try:
        config = ImitationConfig(teacher_share_start=1.0, teacher_share_end=0.2, teacher_decay_frames=1000)
        teacher = TeacherLabels(sim, config)
        assert [teacher.share(f) for f in (0, 500, 1000, 5000)] == pytest.approx([1.0, 0.6, 0.2, 0.2])
        straight = StraightLineTeacher(sim).actions()
        learner = (straight + 1) % 4  # never the teacher's action
        observations, masks = sim.observe(), torch.ones(64, dtype=torch.bool)
        actions, labels, _ = teacher.drive(observations, masks, learner, frames=0)
        assert torch.equal(labels, straight) and torch.equal(actions, straight)  # the teacher drives all
        torch.manual_seed(0)
        never = dataclasses.replace(config, teacher_share_start=0.0, teacher_share_end=0.0)
        actions, _, _ = TeacherLabels(sim, never).drive(observations, masks, learner, frames=0)
        assert torch.equal(actions, learner)
        torch.manual_seed(0)
        actions, _, _ = teacher.drive(observations, masks, learner, frames=500)  # 60% teacher
        assert 0.4 < (actions == straight).float().mean().item() < 0.8
    finally:
        sim.close()


def test_update_raises_the_probability_of_the_teacher_labels():
    policy = tiny_policy()
    storage = labelled_storage(8, 6)
    storage.teacher_actions.fill_(2)  # whatever was driven, the teacher would have turned left
    config = PPOConfig(ppo_epoch=4, num_mini_batch=2, lr=1e-2, value_loss_coef=0.5)
    imitation = ImitationConfig(inflection_weight=2.0, early_stop_weight=1.0)
    dagger = DAgger(policy, config, imitation, config.lr, CPU, distributed=False)

    def teacher_prob() -> float:
        with torch.no_grad():
            batch = next(storage.minibatches(1))
            _, log_probs, _, _, _ = dagger.evaluator(
                batch.observations, batch.hidden, batch.prev_actions, batch.masks, batch.teacher_actions
            )
        return log_probs.exp().mean().item()

    before = teacher_prob()
    stats = dagger.update(storage)
    assert set(stats) == {"action", "early_stop", "value", "teacher_prob", "early_stop_prob", "grad_norm"}
    assert teacher_prob() > before + 0.05


def test_bearing_loss_hand_computed():
    bearings = torch.tensor([0.0, math.pi / 2])
    exact = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert bearing_loss(exact, bearings).item() == pytest.approx(0.0, abs=1e-12)
    # The first prediction points the opposite way (squared error 4), the second is off by (0.5, 0).
    predicted = torch.tensor([[-1.0, 0.0], [0.5, 1.0]])
    assert bearing_loss(predicted, bearings).item() == pytest.approx((4 + 0.25) / 2)


def test_bearing_head_learns_beside_the_policy_and_is_checkpointed():
    policy = tiny_policy()
    storage = labelled_storage(8, 6)
    storage.teacher_bearings.fill_(math.pi / 2)  # the teacher's way is always to the left
    config = PPOConfig(ppo_epoch=4, num_mini_batch=2, lr=1e-2)
    dagger = DAgger(policy, config, ImitationConfig(bearing_weight=1.0), config.lr, CPU, distributed=False)
    first = dagger.update(storage)["bearing"]
    for _ in range(5):
        last = dagger.update(storage)["bearing"]
    assert last < first / 2
    assert policy.state_dict().keys() == tiny_policy().state_dict().keys()  # not exported with the policy
    again = DAgger(tiny_policy(), config, ImitationConfig(bearing_weight=1.0), config.lr, CPU, False)
    again.load_state_dict(dagger.state_dict())
    assert torch.equal(again.trainable.head.bearing.weight, dagger.trainable.head.bearing.weight)


def test_coarse_depth_and_depth_loss_hand_computed():
    depth = torch.full((2, 32, 32, 1), 0.2)
    depth[0, :, 16:] = 0.6  # env 0: a nearer left half, a farther right half
    depth[1, 30:] = 1.0  # env 1: its bottom two rows far, which make the bottom row of the 16x16 image
    targets = coarse_depth(depth).view(2, 16, 16)
    assert targets[0, :, :8].eq(0.2).all() and torch.allclose(targets[0, :, 8:], torch.tensor(0.6))
    assert torch.allclose(targets[1, 15], torch.tensor(1.0)) and targets[1, :15].eq(0.2).all()
    # Predicting 0 everywhere for env 0: half the pixels off by 0.2, half by 0.6.
    assert depth_loss(torch.zeros(256), targets[0].flatten()).item() == pytest.approx((0.04 + 0.36) / 2)


def test_depth_head_teaches_an_rgb_encoder_and_is_not_exported():
    """The depth head learns a depth that the RGB images carry (here, each image's brightness is how far
    its left half is) far better than the best constant guess; it is not part of the policy, and its
    state travels with the trainer's."""
    torch.manual_seed(0)

    def policy():
        return navzoo.create_model(
            "pointnav-simple-cnn", sensors=("rgb", GOAL_SENSOR), resolution=(64, 64), hidden_size=32
        )

    n, steps = 8, 6
    levels = torch.rand(steps + 1, n)

    def rgb(step: int) -> torch.Tensor:
        return (levels[step] * 255).to(torch.uint8).view(n, 1, 1, 1).expand(n, 64, 64, 3).clone()

    goal = torch.zeros(n, 2)
    learner = policy()
    storage = RolloutStorage(steps, {"rgb": rgb(0), GOAL_SENSOR: goal}, learner.initial_state(n))
    for step in range(steps):
        depth = levels[step].view(n, 1, 1, 1).expand(n, 64, 64, 1).clone()
        depth[:, :, 32:] = 0.5  # the right half is always at the same depth
        storage.insert(
            torch.zeros(n, dtype=torch.long),
            torch.zeros(n),
            torch.zeros(n),
            torch.zeros(n),
            {"rgb": rgb(step + 1), GOAL_SENSOR: goal},
            torch.zeros(n, dtype=torch.bool),
            head_targets={"depth": coarse_depth(depth)},
        )
    targets = storage.head_targets["depth"]
    constant_guess = depth_loss(targets.mean((0, 1)), targets).item()
    config = PPOConfig(ppo_epoch=4, num_mini_batch=1, lr=1e-3, max_grad_norm=10.0)
    imitation = ImitationConfig(depth_weight=1.0)
    dagger = DAgger(learner, config, imitation, config.lr, CPU, distributed=False)
    for _ in range(40):
        last = dagger.update(storage)["depth"]
    assert last < constant_guess / 4
    assert learner.state_dict().keys() == policy().state_dict().keys()
    again = DAgger(policy(), config, imitation, config.lr, CPU, distributed=False)
    again.load_state_dict(dagger.state_dict())
    assert torch.equal(again.trainable.head.depth.weight, dagger.trainable.head.depth.weight)


def test_depth_head_needs_eyes_and_renders_depth_for_an_rgb_learner():
    rgb = ["algorithm=dagger", "model=pointnav-simple-cnn", "sim.sensors=[rgb]", "imitation.depth_weight=1"]
    assert load_config("pointnav-blind", rgb).teacher_only_sensors() == ("depth",)
    map_planner = load_config("pointnav-blind", [*rgb, "imitation.teacher=map-planner"])
    assert map_planner.teacher_only_sensors() == ("depth",)  # one depth camera serves both
    with pytest.raises(ConfigError, match=r"imitation\.depth_weight=1.*0 for a blind policy"):
        load_config("pointnav-blind", ["algorithm=dagger", "imitation.depth_weight=1"])
    with pytest.raises(ConfigError, match=r"imitation\.depth_weight=-1"):
        load_config("pointnav-blind", ["algorithm=dagger", "imitation.depth_weight=-1"])
    second_stage = ["algorithm=dagger", "stages.from_frames=8192", "stages.algorithm=dagger"]
    with pytest.raises(ConfigError, match=r"stages\.0\.ppo\.aux_tasks"):
        load_config("pointnav-blind", [*second_stage, "stages.ppo.aux_tasks=[inverse_dynamics]"])


def test_map_loss_hand_computed():
    logits = torch.tensor([[0.0, 2.0], [-1.0, 0.0]])
    targets = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    # -log sigmoid(x) where the square is solid, -log(1 - sigmoid(x)) where it is not
    expected = (math.log(2) + math.log1p(math.exp(-2)) + math.log1p(math.exp(-1)) + math.log(2)) / 4
    assert map_loss(logits, targets).item() == pytest.approx(expected)


def test_map_head_reads_the_memory():
    """Which half of the map holds walls shows only in the first observation of each episode (its goal
    vector's sign); the map head, on the recurrent features, predicts it at every later step far better
    than the best constant guess."""
    torch.manual_seed(0)
    n, steps = 16, 8
    side = torch.randint(0, 2, (n,)).float() * 2 - 1  # +1: walls on the left half, -1: on the right
    left = torch.zeros(16, 16)
    left[:, :8] = 1
    walls = torch.where(side.view(n, 1, 1) > 0, left, 1 - left).flatten(1)
    learner = navzoo.create_model("pointnav-blind", hidden_size=32, num_recurrent_layers=1, rnn_type="GRU")
    first = torch.stack([side, torch.zeros(n)], 1)
    storage = RolloutStorage(steps, {GOAL_SENSOR: first}, learner.initial_state(n))
    for _ in range(steps):
        storage.insert(
            torch.zeros(n, dtype=torch.long),
            torch.zeros(n),
            torch.zeros(n),
            torch.zeros(n),
            {GOAL_SENSOR: torch.zeros(n, 2)},
            torch.zeros(n, dtype=torch.bool),
            head_targets={"map": walls},
        )
    config = PPOConfig(ppo_epoch=4, num_mini_batch=1, lr=3e-3, max_grad_norm=10.0)
    imitation = ImitationConfig(teacher="map-planner", map_weight=1.0)
    dagger = DAgger(learner, config, imitation, config.lr, CPU, distributed=False)
    for _ in range(30):
        last = dagger.update(storage)["map"]
    assert last < math.log(2) / 4  # a constant guess of 0.5 everywhere is the best one: log 2


def test_map_head_needs_the_map_planner():
    with pytest.raises(ConfigError, match=r"imitation\.map_weight=1.*teacher map-planner"):
        load_config("pointnav-blind", ["algorithm=dagger", "imitation.map_weight=1"])
    with pytest.raises(ConfigError, match=r"imitation\.map_weight=-1"):
        load_config(
            "pointnav-blind", ["algorithm=dagger", "imitation.teacher=map-planner", "imitation.map_weight=-1"]
        )
    blind = load_config(
        "pointnav-blind", ["algorithm=dagger", "imitation.teacher=map-planner", "imitation.map_weight=1"]
    )
    assert blind.teacher_only_sensors() == (
        "depth",
    )  # the teacher maps with a depth camera the learner lacks


def test_dagger_needs_pointgoal():
    with pytest.raises(ConfigError, match="algorithm"):
        load_config("pointnav-blind", ["algorithm=dagger", "sim.task=flee"])
    with pytest.raises(ConfigError, match="algorithm"):
        load_config("pointnav-blind", ["algorithm=reinforce"])
    with pytest.raises(ConfigError, match=r"imitation\.teacher_share_start"):
        load_config("pointnav-blind", ["algorithm=dagger", "imitation.teacher_share_start=2"])
    config = load_config("navzoo-pointnav-depth-il")
    assert config.algorithm == "dagger" and config.imitation.inflection_weight > 1


def _turn_patterns(agent, sim: BatchSim, steps: int = 150) -> tuple[float, float]:
    """(share of zigzags: turn, forward, the opposite turn; share of forward moves) over `steps` steps."""
    sim.reset()
    n = sim.num_envs
    before, last = torch.full((n,), STOP), torch.full((n,), STOP)
    zigzags = moves = 0
    for _ in range(steps):
        action = agent.actions()
        turn_back = (
            (action >= TURN_LEFT) & (last == MOVE_FORWARD) & (before >= TURN_LEFT) & (before != action)
        )
        zigzags += int(turn_back.sum())
        moves += int((action == MOVE_FORWARD).sum())
        _, _, done, _ = sim.step(action)
        before, last = torch.where(done, STOP, last), torch.where(done, STOP, action)
    return zigzags / (steps * n), moves / (steps * n)


def test_teacher_walks_straight_lines_where_the_grid_oracle_zigzags():
    """Measured here: the grid oracle zigzags on 12.9% of its steps and moves forward on 41%; the teacher
    3.7% and 50%, with SPL 0.99 on the val episodes."""
    sim = BatchSim(SimConfig(split="val", num_envs=32, sensors=()))
    try:
        teacher_zigzags, teacher_moves = _turn_patterns(StraightLineTeacher(sim), sim)
        grid_zigzags, _ = _turn_patterns(make_baseline("oracle", sim), sim)
        results = evaluate(sim, TeacherAgent(sim), 64, progress=False)
    finally:
        sim.close()
    assert teacher_zigzags < 0.06 and grid_zigzags > 2 * teacher_zigzags, (teacher_zigzags, grid_zigzags)
    assert teacher_moves > 0.45
    summary = summarize(results)
    assert summary["success"] >= 0.97 and summary["spl"] >= 0.95, summary


def test_cpu_kernel_gives_the_tensor_version_s_labels():
    """The numba kernel stops at each segment's first blocked point; the labels must not change."""
    sim = BatchSim(SimConfig(split="train", num_envs=32, sensors=(), seed=3))
    try:
        sim.reset()
        teacher = StraightLineTeacher(sim)
        generator = torch.Generator().manual_seed(0)
        for _ in range(100):
            labels, bearings = teacher.labels()
            reference_labels, reference_bearings = teacher.tensor_labels()
            assert torch.equal(labels, reference_labels)
            torch.testing.assert_close(bearings, reference_bearings, rtol=0, atol=1e-5)
            # Mostly the teacher's way, with random detours into poses it would not choose.
            detour = torch.randint(1, 4, (32,), generator=generator)
            sim.step(torch.where(torch.rand(32, generator=generator) < 0.7, labels, detour))
        assert sim.episode_counter.sum() > 32  # episodes ended and restarted along the way
    finally:
        sim.close()


class TeacherAgent:
    """The teacher as an evaluation agent."""

    def __init__(self, sim: BatchSim):
        self.teacher = StraightLineTeacher(sim)

    def act(self, obs, first):
        return self.teacher.actions()
