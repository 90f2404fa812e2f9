"""Self-supervised auxiliary tasks for PPO (Ye et al., Auxiliary Tasks Speed Up Learning PointGoal
Navigation, CoRL 2020): inverse dynamics and action-conditional contrastive predictive coding (CPC|A).

Both read what the policy computes anyway on a mini-batch of whole sequences [L, n]: the recurrent
features b_t (the agent's belief after seeing step t) and the visual embeddings v_t, and shape them with a
loss of their own. Their heads are trained with the policy (ppo.ActionEvaluator runs them inside the
DDP-wrapped forward) and are not part of the exported model. Index conventions are the rollout's: a_t is
the action taken after observing step t, and masks[t] is False where an episode starts at t.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from navzoo.models.policy import EvaluateResult

ACTION_EMBEDDING = 4  # Ye et al.'s size of the action embedding the CPC|A query reads


class InverseDynamics(nn.Module):
    """Which action a_t led from belief b_t to what was seen next, v_{t+1} (within one episode)."""

    def __init__(self, hidden_size: int, embedding_size: int, num_actions: int):
        super().__init__()
        self.decoder = nn.Linear(hidden_size + embedding_size, num_actions)

    def forward(self, beliefs, embeddings, actions, masks) -> torch.Tensor:
        logits = self.decoder(torch.cat([beliefs[:-1], embeddings[1:]], -1))
        loss = F.cross_entropy(logits.flatten(0, 1), actions[:-1].flatten(), reduction="none")
        valid = masks[1:].flatten().float()  # step t+1 continues step t's episode
        return (loss * valid).sum() / valid.sum().clamp_min(1.0)


class ActionConditionalCPC(nn.Module):
    """CPC|A-k: from belief b_t, a GRU reads the actions a_t .. a_{t+j-1} and its output must tell the
    embedding v_{t+j} that really followed from one drawn at random from the mini-batch, for j = 1 .. k,
    as long as step t+j is in the rollout and in step t's episode. A `subsample` share of the start
    steps is used, as Ye et al. do, which keeps the cost a fraction of the policy's own."""

    def __init__(self, hidden_size: int, embedding_size: int, num_actions: int, steps: int, subsample: float):
        super().__init__()
        self.steps, self.subsample = steps, subsample
        self.action_embedding = nn.Embedding(num_actions, ACTION_EMBEDDING)
        self.query = nn.GRU(ACTION_EMBEDDING, hidden_size)
        self.classifier = nn.Sequential(
            nn.Linear(hidden_size + embedding_size, 32), nn.ReLU(), nn.Linear(32, 1)
        )

    def forward(self, beliefs, embeddings, actions, masks) -> torch.Tensor:
        length, n = masks.shape
        device = masks.device
        starts = torch.nonzero(torch.rand(length - 1, n, device=device) < self.subsample)  # (t, env)
        if len(starts) == 0:
            return beliefs.sum() * 0.0  # keeps every parameter in the graph, as DDP expects
        t, env = starts[:, 0], starts[:, 1]
        future, valid = predicted_steps(t, env, masks, self.steps)
        taken = actions[(future - 1).clamp_max(length - 1), env[None, :]]  # a_{t+j-1}
        queries, _ = self.query(self.action_embedding(taken), beliefs[t, env][None].contiguous())
        positives = embeddings[future, env[None, :]]
        pick = torch.randint(length * n, future.shape, device=device)
        negatives = embeddings.reshape(length * n, -1)[pick]
        positive_logits = self.classifier(torch.cat([queries, positives], -1)).squeeze(-1)
        negative_logits = self.classifier(torch.cat([queries, negatives], -1)).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(
            positive_logits, torch.ones_like(positive_logits), reduction="none"
        ) + F.binary_cross_entropy_with_logits(
            negative_logits, torch.zeros_like(negative_logits), reduction="none"
        )
        weight = valid.float()
        return (loss * weight).sum() / weight.sum().clamp_min(1.0)


def predicted_steps(t, env, masks, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For CPC|A queries starting at steps `t` [S] of environments `env` [S]: the steps t+1 .. t+k they
    predict ([k, S], clamped into the rollout) and whether each prediction counts: step t+j is inside the
    rollout and no episode starts in (t, t+j]."""
    length = masks.shape[0]
    ahead = torch.arange(1, steps + 1, device=masks.device)
    future = t[None, :] + ahead[:, None]
    inside = future < length
    future = future.clamp_max(length - 1)
    continues = masks[future, env[None, :]] & inside
    return future, continues.long().cumprod(0).bool()


class AuxiliaryTasks(nn.Module):
    """The configured tasks as one head for ppo.ActionEvaluator: returns {task name: loss}."""

    def __init__(
        self, tasks: tuple[str, ...], hidden_size: int, embedding_size: int, num_actions: int, cpca_steps: int
    ):
        super().__init__()
        self.tasks = nn.ModuleDict()
        if "inverse_dynamics" in tasks:
            self.tasks["inverse_dynamics"] = InverseDynamics(hidden_size, embedding_size, num_actions)
        if "cpca" in tasks:
            self.tasks["cpca"] = ActionConditionalCPC(
                hidden_size, embedding_size, num_actions, cpca_steps, subsample=0.2
            )

    def forward(self, result: EvaluateResult, actions: torch.Tensor, masks: torch.Tensor) -> dict:
        return {
            name: task(result.features, result.visual, actions, masks) for name, task in self.tasks.items()
        }
