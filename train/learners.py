"""The learner of a stage: the update rule its algorithm trains the policy with (PPO, DAgger or
Kickstart), with a fresh optimiser at the stage's learning rate."""

from __future__ import annotations

import math

import torch

from navzoo.models import ActorCritic
from navzoo.train.config_blocks import ImitationConfig, PPOConfig
from navzoo.train.imitation import DAgger, ImitationHeads
from navzoo.train.kickstart import Kickstart
from navzoo.train.ppo import PPO


def learning_rate(ppo: PPOConfig, frames_per_update: int) -> float:
    """The learning rate of a `ppo` block, scaled by the batch size where it asks (BPS)."""
    lr = ppo.lr
    if ppo.lr_scaling == "sqrt":
        batch = frames_per_update / ppo.num_mini_batch
        lr *= math.sqrt(batch / ppo.reference_batch)
    return lr


def make_learner(
    algorithm: str,
    policy: ActorCritic,
    ppo: PPOConfig,
    imitation: ImitationConfig,
    frames_per_update: int,
    device: torch.device,
    distributed: bool,
    heads: ImitationHeads | None = None,
) -> PPO:
    """The update of `algorithm` with the settings of `ppo` (and the teacher's `imitation`) and a fresh
    optimiser; `heads`: DAgger's heads of an earlier stage, which go on learning."""
    lr = learning_rate(ppo, frames_per_update)
    if algorithm == "dagger":
        return DAgger(policy, ppo, imitation, lr, device, distributed, heads)
    if algorithm == "kickstart":
        return Kickstart(policy, ppo, imitation, lr, device, distributed)
    return PPO(policy, ppo, lr, device, distributed)
