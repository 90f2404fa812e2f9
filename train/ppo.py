"""The PPO update: clipped surrogate, (clipped) value loss, entropy bonus, optional V-trace targets.

The maths is in small functions (`ppo_losses`, `vtrace`) that the tests check on hand-computed cases; the
`PPO` class runs them over a rollout's mini-batches through DistributedDataParallel, so every backward
pass all-reduces the gradients of all workers before the optimiser step.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from navzoo.models.policy import ActorCritic
from navzoo.train.auxiliary import AuxiliaryTasks
from navzoo.train.config_blocks import PPOConfig
from navzoo.train.rollout import MiniBatch, RolloutStorage


@dataclass
class Losses:
    total: torch.Tensor
    action: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor
    clip_fraction: torch.Tensor
    approx_kl: torch.Tensor


def ppo_losses(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    config: PPOConfig,
) -> Losses:
    """PPO's objective as habitat-baselines writes it (losses to minimise, means over all elements)."""
    ratio = torch.exp(log_probs - old_log_probs)
    clipped_ratio = ratio.clamp(1.0 - config.clip_param, 1.0 + config.clip_param)
    action_loss = -torch.min(ratio * advantages, clipped_ratio * advantages).mean()
    if config.use_clipped_value_loss:
        clipped_values = old_values + (values - old_values).clamp(-config.clip_param, config.clip_param)
        value_loss = 0.5 * torch.max((values - returns) ** 2, (clipped_values - returns) ** 2).mean()
    else:
        value_loss = 0.5 * ((values - returns) ** 2).mean()
    entropy = entropy.mean()
    total = config.value_loss_coef * value_loss + action_loss - config.entropy_coef * entropy
    with torch.no_grad():
        clip_fraction = ((ratio - 1.0).abs() > config.clip_param).float().mean()
        approx_kl = (old_log_probs - log_probs).mean()
    return Losses(total, action_loss, value_loss, entropy, clip_fraction, approx_kl)


def vtrace(
    behaviour_log_probs: torch.Tensor,
    target_log_probs: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap: torch.Tensor,
    discounts: torch.Tensor,
    clip_rho: float = 1.0,
    clip_c: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """V-trace value targets v_s and policy-gradient advantages (IMPALA, Espeholt et al. 2018, eq. 1).

    Inputs are [T, N]; `discounts` is gamma where the episode goes on after step t and 0 where it ended.
    c_t carries IMPALA's lambda (section 4.2), so on-policy targets equal TD(lambda) returns. Advantages
    are r_t + gamma v_{t+1} - V(x_t): PPO's clipped ratio stands in for IMPALA's rho_t factor.
    """
    ratio = torch.exp(target_log_probs - behaviour_log_probs)
    rho = ratio.clamp(max=clip_rho)
    c = lam * ratio.clamp(max=clip_c)
    next_values = torch.cat([values[1:], bootstrap[None]])
    deltas = rho * (rewards + discounts * next_values - values)
    correction = torch.zeros_like(bootstrap)
    targets = torch.empty_like(values)
    for t in reversed(range(values.shape[0])):
        correction = deltas[t] + discounts[t] * c[t] * correction
        targets[t] = values[t] + correction
    next_targets = torch.cat([targets[1:], bootstrap[None]])
    advantages = rewards + discounts * next_targets - values
    return targets, advantages


def actor_lr_factor(config: PPOConfig, update: int) -> float:
    """The share of the learning rate everything but the critic head gets at update `update`: 0 while the
    critic warms up, then rising linearly to actor_lr_scale over actor_warmup_updates."""
    warm = update - config.critic_warmup_updates
    if warm < 0:
        return 0.0
    ramp = min(1.0, (warm + 1) / config.actor_warmup_updates) if config.actor_warmup_updates else 1.0
    return ramp * config.actor_lr_scale


def _by_role(policy: ActorCritic, groups: list[dict], config: PPOConfig) -> list[dict]:
    """Optimiser groups split into the critic head's parameters and the rest ("actor": encoder, recurrent
    core, action head), so the warm-up can hold the actor still. Without a warm-up the groups are kept as
    they are, so checkpoints of runs without one keep their optimiser layout."""
    if not (config.critic_warmup_updates or config.actor_warmup_updates or config.actor_lr_scale != 1):
        return groups
    critic = {id(p) for p in policy.critic.parameters()}
    split = []
    for group in groups:
        for role in ("actor", "critic"):
            params = [p for p in group["params"] if (id(p) in critic) == (role == "critic")]
            if params:
                split.append({**group, "params": params, "role": role})
    return split


def cpu_has_native_bfloat16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX512-BF16 or AMX). Elsewhere torch emulates it, and
    a bfloat16 autocast step takes 10-20 times as long as a float32 one."""
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def _amp_dtype(device: torch.device) -> torch.dtype | None:
    """float16 on CUDA; bfloat16 on a CPU that has it natively, else None (float32) with a warning."""
    if device.type == "cuda":
        return torch.float16
    if cpu_has_native_bfloat16():
        return torch.bfloat16
    warnings.warn(
        "ppo.amp=true: this CPU has no native bfloat16 (AVX512-BF16 or AMX), where autocast runs 10-20x "
        "slower than float32, so this run trains in float32",
        stacklevel=3,
    )
    return None


class ActionEvaluator(nn.Module):
    """`policy.evaluate_actions` as a forward(), so DistributedDataParallel can hook the backward pass; with
    `head`, also that head's output `head(result, actions, masks)`: an auxiliary prediction or loss on what
    the policy computed, trained with the policy but not part of it, whose gradients are all-reduced too."""

    def __init__(self, policy: ActorCritic, head: nn.Module | None = None):
        super().__init__()
        self.policy = policy
        self.head = head

    def forward(self, observations, hidden, prev_actions, masks, actions):
        result = self.policy.evaluate_actions(observations, hidden, prev_actions, masks, actions)
        auxiliary = self.head(result, actions, masks) if self.head is not None else None
        return result.value, result.log_prob, result.entropy, result.action_log_probs, auxiliary


class PPO:
    def __init__(
        self,
        policy: ActorCritic,
        config: PPOConfig,
        lr: float,
        device: torch.device,
        distributed: bool,
        head: nn.Module | None = None,
    ):
        """`head`: an auxiliary head trained with the policy (see ActionEvaluator); without one, the
        self-supervised tasks of `config.aux_tasks` (navzoo.train.auxiliary) are the head. Its parameters
        join the optimiser and the state dict."""
        self.policy, self.config, self.device = policy, config, device
        if head is None and config.aux_tasks:
            size = policy.config.hidden_size
            head = AuxiliaryTasks(config.aux_tasks, size, size, policy.config.num_actions, config.cpca_steps)
        evaluator = ActionEvaluator(policy, head).to(device)  # the head is built on the CPU
        self.trainable = evaluator  # the policy and the head: what the optimiser steps
        # With one worker there is nothing to all-reduce; DDP would only add its bookkeeping.
        self.evaluator = (
            DistributedDataParallel(evaluator, device_ids=[device] if device.type == "cuda" else None)
            if distributed
            else evaluator
        )
        if config.optimizer == "lamb":
            # timm's public name for it (its old optim_factory says "import via timm.optim"); it is defined in
            # the private timm.optim._param_groups, which timm.optim re-exports without an __all__.
            from timm.optim import param_groups_weight_decay  # pyright: ignore[reportPrivateImportUsage]
            from timm.optim.lamb import Lamb

            # Biases and 1-D parameters (norms, Fixup scales) get no decay, and timm's Lamb then skips
            # the layer-wise trust ratio for them, which makes them plain Adam steps as in BPS.
            groups = param_groups_weight_decay(evaluator, config.weight_decay)
            self.optimizer = Lamb(
                _by_role(policy, groups, config),
                lr=lr,
                eps=config.eps,
                weight_decay=config.weight_decay,
                max_grad_norm=None,
            )  # gradients are already clipped below
        else:
            groups = [{"params": [p for p in evaluator.parameters() if p.requires_grad]}]
            self.optimizer = torch.optim.Adam(
                _by_role(policy, groups, config), lr=lr, eps=config.eps, weight_decay=config.weight_decay
            )
        self.base_lr = lr
        self.amp_dtype = _amp_dtype(device) if config.amp else None
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.amp_dtype == torch.float16)

    def autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def set_progress(self, fraction_done: float, update: int) -> float:
        """Set the learning rates of update number `update` (from 0): linear decay to zero over the run
        (when enabled), and the actor's warm-up (PPOConfig.critic_warmup_updates). Returns the critic's."""
        lr = self.base_lr * (1.0 - fraction_done if self.config.use_linear_lr_decay else 1.0)
        actor = lr * actor_lr_factor(self.config, update)
        for group in self.optimizer.param_groups:
            group["lr"] = actor if group.get("role") == "actor" else lr
        return lr

    def update(self, storage: RolloutStorage) -> dict[str, float]:
        """Epochs over the rollout; returns the mean of each loss statistic over all mini-batches."""
        cfg = self.config
        sums: dict[str, float] = {}
        count = 0
        for _ in range(cfg.ppo_epoch):
            for batch in storage.minibatches(cfg.num_mini_batch, cfg.use_normalized_advantage):
                total, stats = self._losses(batch)
                stats = {k: float(v.detach()) for k, v in stats.items()}
                stats["grad_norm"] = self._step(total)
                for k, v in stats.items():
                    sums[k] = sums.get(k, 0.0) + v
                count += 1
        return {k: v / count for k, v in sums.items()}

    def _losses(self, batch: MiniBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss to minimise on a mini-batch and the statistics logged under loss/."""
        with self.autocast():
            outputs = self.evaluator(
                batch.observations, batch.hidden, batch.prev_actions, batch.masks, batch.actions
            )
        return self._objective(batch, outputs)

    def _objective(self, batch: MiniBatch, outputs: tuple) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss and statistics from the evaluator's `outputs` (ActionEvaluator.forward) on `batch`."""
        cfg = self.config
        values, log_probs, entropy, _, auxiliary = outputs
        values = values.float()
        returns, advantages = batch.returns, batch.advantages
        if cfg.vtrace:
            # Targets from the current policy and value function; each mini-batch holds whole sequences.
            returns, advantages = vtrace(
                batch.log_probs,
                log_probs.detach(),
                batch.rewards,
                values.detach(),
                batch.bootstrap,
                cfg.gamma * batch.next_masks.float(),
                cfg.vtrace_clip_rho,
                cfg.vtrace_clip_c,
                cfg.tau,
            )
            if cfg.use_normalized_advantage:
                advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-5)
        losses = ppo_losses(
            log_probs, batch.log_probs, advantages, values, batch.values, returns, entropy, cfg
        )
        stats = {k: getattr(losses, k) for k in ("action", "value", "entropy", "clip_fraction", "approx_kl")}
        total = losses.total
        for name, loss in (auxiliary or {}).items():
            stats[f"aux_{name}"] = loss
            total = total + cfg.aux_loss_coef * loss.float()
        return total, stats

    def _step(self, total: torch.Tensor) -> float:
        """One optimiser step on `total`; returns the gradient norm before clipping."""
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(total).backward()
        self.scaler.unscale_(self.optimizer)
        params = [p for p in self.trainable.parameters() if p.requires_grad]
        grad_norm = float(nn.utils.clip_grad_norm_(params, self.config.max_grad_norm))
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return grad_norm

    def state_dict(self) -> dict:
        state = {"optimizer": self.optimizer.state_dict(), "scaler": self.scaler.state_dict()}
        if self.trainable.head is not None:
            state["head"] = self.trainable.head.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])
        if self.trainable.head is not None:
            self.trainable.head.load_state_dict(state["head"])
