"""Kickstarting (navzoo.train.kickstart): DD-PPO's loss plus the teacher's cross-entropy, from rollouts the
learner drives alone."""

import math

import pytest
import torch

from navzoo.errors import ConfigError
from navzoo.sim import BatchSim, SimConfig
from navzoo.train.config import load_config
from navzoo.train.config_blocks import ImitationConfig, PPOConfig
from navzoo.train.imitation import TEACHER_PROBS, TeacherLabels, cloning_loss, inflection_weights
from navzoo.train.kickstart import Kickstart
from navzoo.train.ppo import PPO
from navzoo.train.teacher import StraightLineTeacher
from tests.train.test_ppo import labelled_storage, tiny_policy

pytestmark = pytest.mark.usefixtures("one_thread")

CPU = torch.device("cpu")


def test_cloning_loss_hand_computed():
    probs = torch.tensor([[[0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]]])  # [L=1, n=2, A=4]
    teacher_actions = torch.tensor([[1, 3]])
    loss, log_probs = cloning_loss(probs.log(), teacher_actions, torch.tensor([[3.0, 1.0]]))
    assert log_probs.exp().flatten().tolist() == pytest.approx([0.6, 0.25])
    assert loss.item() == pytest.approx(-(3 * math.log(0.6) + math.log(0.25)) / 4)
    # A policy teacher's distribution replaces its drawn label: env 0's teacher is sure of action 1 half
    # the time and of action 2 the other half; env 1's of action 0.
    teacher_probs = torch.tensor([[[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]]])
    soft, log_probs = cloning_loss(probs.log(), teacher_actions, torch.tensor([[3.0, 1.0]]), teacher_probs)
    env0 = -(0.5 * math.log(0.6) + 0.5 * math.log(0.2))
    assert soft.item() == pytest.approx((3 * env0 - math.log(0.25)) / 4)
    assert log_probs.exp().flatten().tolist() == pytest.approx([0.6, 0.25])  # still the drawn labels'


def test_kickstart_loss_is_ppo_s_plus_the_weighted_cloning_loss():
    policy = tiny_policy()
    storage = labelled_storage(8, 6)
    storage.teacher_actions.copy_(
        torch.randint(0, 4, storage.teacher_actions.shape, generator=torch.Generator().manual_seed(0))
    )
    config = PPOConfig(ppo_epoch=1, num_mini_batch=1)
    imitation = ImitationConfig(inflection_weight=3.0, kickstart_weight=0.7)
    kickstart = Kickstart(policy, config, imitation, config.lr, CPU, distributed=False)
    ppo = PPO(policy, config, config.lr, CPU, distributed=False)
    batch = next(storage.minibatches(1))
    with torch.no_grad():
        outputs = kickstart.evaluator(
            batch.observations, batch.hidden, batch.prev_actions, batch.masks, batch.actions
        )
        total, stats = kickstart._objective(batch, outputs)
        ppo_total, _ = ppo._objective(batch, outputs)
    weights = inflection_weights(batch.teacher_actions, batch.masks, 3.0)
    log_probs = outputs[3].gather(-1, batch.teacher_actions[..., None]).squeeze(-1)
    by_hand = -(weights * log_probs).sum() / weights.sum()
    assert stats["imitation"].item() == pytest.approx(by_hand.item(), rel=1e-6)
    assert total.item() == pytest.approx(ppo_total.item() + 0.7 * by_hand.item(), rel=1e-6)
    assert stats["teacher_prob"].item() == pytest.approx(log_probs.exp().mean().item(), rel=1e-6)


def test_kickstart_with_a_policy_teacher_takes_the_cross_entropy_to_its_distribution():
    policy = tiny_policy()
    storage = labelled_storage(8, 6)
    probs = torch.rand(8, 6, 4, generator=torch.Generator().manual_seed(1))
    storage.head_targets[TEACHER_PROBS] = probs / probs.sum(-1, keepdim=True)
    config = PPOConfig(ppo_epoch=1, num_mini_batch=1)
    kickstart = Kickstart(policy, config, ImitationConfig(), config.lr, CPU, distributed=False)
    batch = next(storage.minibatches(1))
    with torch.no_grad():
        outputs = kickstart.evaluator(
            batch.observations, batch.hidden, batch.prev_actions, batch.masks, batch.actions
        )
        _, stats = kickstart._objective(batch, outputs)
    by_hand = -(batch.head_targets[TEACHER_PROBS] * outputs[3]).sum(-1).mean()
    assert stats["imitation"].item() == pytest.approx(by_hand.item(), rel=1e-6)


def test_update_without_advantages_moves_the_policy_to_the_labels():
    """With no advantages PPO's actor term is nothing, and the update follows the teacher alone."""
    policy = tiny_policy()
    storage = labelled_storage(8, 6)
    storage.teacher_actions.fill_(2)
    config = PPOConfig(ppo_epoch=4, num_mini_batch=2, lr=1e-2, entropy_coef=0.0)
    kickstart = Kickstart(policy, config, ImitationConfig(), config.lr, CPU, distributed=False)
    storage.advantages.zero_()
    first = kickstart.update(storage)
    last = kickstart.update(storage)
    assert {"action", "value", "entropy", "clip_fraction", "imitation", "teacher_prob"} <= first.keys()
    assert last["teacher_prob"] > first["teacher_prob"] + 0.05


def test_the_teacher_labels_and_the_learner_drives():
    sim = BatchSim(SimConfig(split="train", num_envs=32, sensors=()))
    try:
        labelling = TeacherLabels(sim, ImitationConfig(teacher_share_start=1.0), drives=False)
        assert labelling.share(0) == 0.0
        straight = StraightLineTeacher(sim).actions()
        learner = (straight + 1) % 4
        actions, labels, _ = labelling.drive(
            sim.observe(), torch.ones(32, dtype=torch.bool), learner, frames=0
        )
        assert torch.equal(actions, learner) and torch.equal(labels, straight)
    finally:
        sim.close()


@pytest.mark.parametrize(
    "overrides, field",
    [
        (["algorithm=kickstart", "imitation.depth_weight=1"], "imitation.depth_weight"),
        (["algorithm=kickstart", "imitation.kickstart_weight=-1"], "imitation.kickstart_weight"),
        (["algorithm=kickstart", "sim.task=flee"], "algorithm"),
        (
            [
                "algorithm=dagger",
                "stages=[{from_frames: 4096, algorithm: kickstart}]",
                "imitation.map_weight=1",
                "imitation.teacher=map-planner",
            ],
            "imitation.map_weight",
        ),
    ],
)
def test_kickstart_settings_that_cannot_work_are_refused(overrides, field):
    with pytest.raises(ConfigError, match=field):
        load_config("navzoo-pointnav-depth", ["stages=[]", *overrides])
