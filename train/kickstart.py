"""Kickstarting (Schmitt et al. 2018): DD-PPO whose loss also holds the policy to a teacher.

The learner drives every step, so the rollout is PPO's own; the teacher (navzoo.train.teacher, as for
DAgger) labels each step, and the update adds `imitation.kickstart_weight` times the teacher's
inflection-weighted cross-entropy to PPO's loss. Where the learner can tell what the teacher would do, the
imitation term keeps it there; where it cannot (the same view, the teacher turning left one time and right
the next), that term is at its floor whatever the policy does there, and the rewards choose: an imitation
policy that samples left and right alike dithers in place until the episode times out, and PPO learns that
this costs steps.
"""

from __future__ import annotations

import torch

from navzoo.models.policy import ActorCritic
from navzoo.train.config_blocks import ImitationConfig, PPOConfig
from navzoo.train.imitation import TEACHER_PROBS, cloning_loss, inflection_weights
from navzoo.train.ppo import PPO
from navzoo.train.rollout import MiniBatch


class Kickstart(PPO):
    """PPO's update with the teacher's cross-entropy added."""

    def __init__(
        self,
        policy: ActorCritic,
        config: PPOConfig,
        imitation: ImitationConfig,
        lr: float,
        device: torch.device,
        distributed: bool,
    ):
        super().__init__(policy, config, lr, device, distributed)
        self.imitation = imitation

    def _objective(self, batch: MiniBatch, outputs: tuple) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        total, stats = super()._objective(batch, outputs)
        action_log_probs = outputs[3].float()
        weights = inflection_weights(batch.teacher_actions, batch.masks, self.imitation.inflection_weight)
        soft = batch.head_targets.get(TEACHER_PROBS)
        imitation, teacher_log_probs = cloning_loss(action_log_probs, batch.teacher_actions, weights, soft)
        stats["imitation"] = imitation
        stats["teacher_prob"] = teacher_log_probs.detach().exp().mean()
        return total + self.imitation.kickstart_weight * imitation, stats
