"""What a policy's forward pass, `act` and `evaluate_actions` return (navzoo.models.interface).

Plain records of tensors, importing no model: the interface and the policies that implement it both use
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.distributions import Categorical


@dataclass
class PolicyOutput:
    """Differentiable outputs of one forward pass; leading dims are those of `masks`."""

    distribution: Categorical
    value: torch.Tensor
    hidden: torch.Tensor
    features: torch.Tensor
    visual: torch.Tensor | None = None  # the visual embedding fed to the recurrent core (None if blind)


@dataclass
class ActResult:
    action: torch.Tensor  # [N] int64
    log_prob: torch.Tensor  # [N]
    value: torch.Tensor  # [N]
    hidden: torch.Tensor  # [N, R, H]


@dataclass
class EvaluateResult:
    value: torch.Tensor  # [T, N]
    log_prob: torch.Tensor  # [T, N]
    entropy: torch.Tensor  # [T, N]
    hidden: torch.Tensor  # [N, R, H] after the last step
    action_log_probs: torch.Tensor  # [T, N, A] log-probabilities of every action
    features: torch.Tensor  # [T, N, H] the recurrent output both heads read (auxiliary heads read it too)
    visual: torch.Tensor | None  # [T, N, E] the visual embedding of each step (None for a blind policy)
