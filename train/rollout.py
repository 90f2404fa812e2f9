"""Rollout storage for recurrent PPO: one worker's T steps of N environments, and GAE over them.

Index t holds what the policy saw before acting at step t: observations[t], prev_actions[t] and masks[t]
(False where an episode starts at t, so the recurrent state is reset there). The action, its log-prob,
the value estimate and the reward of step t are stored at t too. values[length] is the bootstrap value of
the observation after the last step. `hidden` is the recurrent state before step 0, which is all PPO needs
to replay whole sequences. A rollout may stop early (preemption), so `length` can be below num_steps.
For imitation (navzoo.train.imitation), `teacher_actions` holds the teacher's label of each step and
`teacher_bearings` the direction of its way relative to the agent's heading, and `head_targets` what the
imitation heads that are on learn to predict at each step (the coarse depth image, the seen map), by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass
class MiniBatch:
    """Whole sequences of a subset of environments: [L, n, ...] tensors, hidden [n, R, H]."""

    observations: dict[str, torch.Tensor]
    hidden: torch.Tensor
    prev_actions: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    returns: torch.Tensor
    advantages: torch.Tensor
    rewards: torch.Tensor
    next_masks: torch.Tensor  # masks[t + 1]: False where step t ended its episode
    bootstrap: torch.Tensor  # [n] value after the last step
    teacher_actions: torch.Tensor  # the teacher's action at each step (imitation only)
    teacher_bearings: torch.Tensor  # the teacher's bearing at each step, radians (imitation only)
    head_targets: dict[str, torch.Tensor]  # [L, n, D] each step's target of each imitation head that is on


# What RolloutStorage keeps of each environment at each step besides observations and head targets: for
# num_steps + 1 steps int64 prev_actions, bool masks and float32 values; for num_steps int64 actions and
# teacher_actions, and float32 teacher_bearings, log_probs, rewards, returns and advantages.
_BYTES_PER_STEP_AND_BOOTSTRAP = 8 + 1 + 4
_BYTES_PER_STEP = 2 * 8 + 5 * 4


def storage_bytes(
    num_steps: int, num_envs: int, observation_bytes: int, head_bytes: int, hidden_bytes: int
) -> int:
    """What RolloutStorage allocates: `observation_bytes` and `head_bytes` (the imitation heads' targets)
    are one environment's at one step, `hidden_bytes` its recurrent state."""
    steps_and_bootstrap = (num_steps + 1) * (observation_bytes + _BYTES_PER_STEP_AND_BOOTSTRAP)
    return num_envs * (steps_and_bootstrap + num_steps * (_BYTES_PER_STEP + head_bytes) + hidden_bytes)


class RolloutStorage:
    def __init__(
        self,
        num_steps: int,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
    ):
        """`observations` is one batch [N, ...] from the simulator; it becomes step 0."""
        self.num_steps = num_steps
        n = hidden.shape[0]
        dev = hidden.device
        self.observations = {k: v.new_zeros((num_steps + 1, *v.shape)) for k, v in observations.items()}
        self.hidden = hidden.clone()
        self.prev_actions = torch.zeros(num_steps + 1, n, dtype=torch.long, device=dev)
        self.masks = torch.zeros(num_steps + 1, n, dtype=torch.bool, device=dev)
        self.actions = torch.zeros(num_steps, n, dtype=torch.long, device=dev)
        self.teacher_actions = torch.zeros(num_steps, n, dtype=torch.long, device=dev)
        self.teacher_bearings = torch.zeros(num_steps, n, device=dev)
        self.head_targets: dict[str, torch.Tensor] = {}  # allocated by the first insert that has them
        self.log_probs = torch.zeros(num_steps, n, device=dev)
        self.values = torch.zeros(num_steps + 1, n, device=dev)
        self.rewards = torch.zeros(num_steps, n, device=dev)
        self.returns = torch.zeros(num_steps, n, device=dev)
        self.advantages = torch.zeros(num_steps, n, device=dev)
        self.restart(observations, hidden)

    def restart(self, observations: dict[str, torch.Tensor], hidden: torch.Tensor) -> None:
        """Start the next rollout from new episodes in every environment: `observations` [N, ...] their
        first, `hidden` the recurrent state to start from."""
        self.hidden.copy_(hidden)
        self.prev_actions[0].zero_()
        self.masks[0].zero_()
        for k, v in observations.items():
            self.observations[k][0].copy_(v)
        self.length = 0

    @property
    def num_envs(self) -> int:
        return self.hidden.shape[0]

    def current(self) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        """Observations, previous actions and masks the policy acts on at the current step."""
        t = self.length
        return {k: v[t] for k, v in self.observations.items()}, self.prev_actions[t], self.masks[t]

    def insert(
        self,
        actions: torch.Tensor,
        log_probs: torch.Tensor,
        values: torch.Tensor,
        rewards: torch.Tensor,
        next_observations: dict[str, torch.Tensor],
        dones: torch.Tensor,
        teacher_actions: torch.Tensor | None = None,
        teacher_bearings: torch.Tensor | None = None,
        head_targets: dict[str, torch.Tensor] | None = None,
    ) -> None:
        t = self.length
        self.actions[t].copy_(actions)
        if teacher_actions is not None:
            self.teacher_actions[t].copy_(teacher_actions)
        if teacher_bearings is not None:
            self.teacher_bearings[t].copy_(teacher_bearings)
        for name, target in (head_targets or {}).items():
            if name not in self.head_targets:
                self.head_targets[name] = target.new_zeros((self.num_steps, *target.shape))
            self.head_targets[name][t].copy_(target)
        self.log_probs[t].copy_(log_probs)
        self.values[t].copy_(values)
        self.rewards[t].copy_(rewards)
        for k, v in next_observations.items():
            self.observations[k][t + 1].copy_(v)
        self.prev_actions[t + 1].copy_(actions)
        self.masks[t + 1].copy_(~dones)
        self.length = t + 1

    def compute_returns(self, bootstrap: torch.Tensor, gamma: float, tau: float) -> None:
        """GAE(gamma, tau) advantages and returns; no bootstrapping across an episode end."""
        length = self.length
        self.values[length].copy_(bootstrap)
        gae = torch.zeros_like(bootstrap)
        for t in reversed(range(length)):
            not_done = self.masks[t + 1].float()
            delta = self.rewards[t] + gamma * self.values[t + 1] * not_done - self.values[t]
            gae = delta + gamma * tau * not_done * gae
            self.advantages[t] = gae
            self.returns[t] = gae + self.values[t]

    def minibatches(self, num_mini_batch: int, normalize_advantage: bool = False) -> Iterator[MiniBatch]:
        """Split the environments at random into `num_mini_batch` groups of whole sequences."""
        length = self.length
        advantages = self.advantages[:length]
        if normalize_advantage:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-5)
        order = torch.randperm(self.num_envs, device=self.hidden.device)
        for idx in order.tensor_split(num_mini_batch):  # exactly num_mini_batch groups, unlike chunk()
            yield MiniBatch(
                observations={k: v[:length, idx] for k, v in self.observations.items()},
                hidden=self.hidden[idx],
                prev_actions=self.prev_actions[:length, idx],
                masks=self.masks[:length, idx],
                actions=self.actions[:length, idx],
                log_probs=self.log_probs[:length, idx],
                values=self.values[:length, idx],
                returns=self.returns[:length, idx],
                advantages=advantages[:, idx],
                rewards=self.rewards[:length, idx],
                next_masks=self.masks[1 : length + 1, idx],
                bootstrap=self.values[length, idx],
                teacher_actions=self.teacher_actions[:length, idx],
                teacher_bearings=self.teacher_bearings[:length, idx],
                head_targets={name: v[:length, idx] for name, v in self.head_targets.items()},
            )

    def after_update(self, hidden: torch.Tensor) -> None:
        """Start the next rollout from where this one stopped; `hidden` is the state after its last step."""
        length = self.length
        for v in self.observations.values():
            v[0].copy_(v[length])
        self.prev_actions[0].copy_(self.prev_actions[length])
        self.masks[0].copy_(self.masks[length])
        self.hidden.copy_(hidden)
        self.length = 0

    def carry_state(self) -> dict[str, torch.Tensor]:
        """What a checkpoint needs to continue the next rollout exactly (observations are re-rendered)."""
        assert self.length == 0, "checkpoints are taken between rollouts"
        return {
            "hidden": self.hidden.cpu(),
            "prev_actions": self.prev_actions[0].cpu(),
            "masks": self.masks[0].cpu(),
        }

    def load_carry_state(self, state: dict[str, torch.Tensor], observations: dict[str, torch.Tensor]) -> None:
        self.hidden.copy_(state["hidden"])
        self.prev_actions[0].copy_(state["prev_actions"])
        self.masks[0].copy_(state["masks"])
        for k, v in observations.items():
            self.observations[k][0].copy_(v)
        self.length = 0
