"""Imitation of a teacher, DAgger-style (Ross et al. 2011), inside the trainer.

The embedded simulator knows every scene's distance field, so a teacher can label every step of every
rollout with the action it would take there (navzoo.train.teacher): the shortest-path teacher, which knows
the whole map, or the map-planner, which knows what the agent has seen. The learner drives; a random share
of the steps is driven by the teacher instead (DAgger's mixture policy), and that share decays over
training. The update clones the labels over the rollout's whole sequences, several epochs of
mini-batches like PPO's, through the same recurrent masking and DistributedDataParallel all-reduce. The
critic learns the rollout's returns meanwhile, so that DD-PPO fine-tuning of the same model starts with
a useful value function (PIRLNav, Ramrakhya et al. 2023).

`cloning_loss`, `imitation_losses`, `inflection_weights`, `bearing_loss`, `depth_loss` and `map_loss` are the
maths, small enough to check by hand; `DAgger` is PPO's update with that loss; `TeacherLabels` labels the
steps and picks who drives.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from navzoo.models.policy import ActorCritic, EvaluateResult
from navzoo.models.weights import weights_digest
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import STOP
from navzoo.train.config_blocks import ImitationConfig, PPOConfig
from navzoo.train.ppo import PPO
from navzoo.train.rollout import MiniBatch
from navzoo.train.teacher import MapPlannerTeacher, PolicyTeacher, make_teacher

DEPTH_TARGET_SIZE = 16  # the depth head predicts the depth image average-pooled to this many pixels a side
MAP_TARGET_SIZE = 16  # the map head predicts this many squares a side around the agent ...
MAP_TARGET_CELL = 0.5  # ... each this many metres wide: 8 m x 8 m
TEACHER_PROBS = "teacher_probs"  # the step target holding a policy teacher's action distribution
WEIGHTS_DIGEST = "weights_sha256"  # a policy teacher's record key: pins it by its numbers, not its name


@dataclass
class ImitationLosses:
    total: torch.Tensor
    action: torch.Tensor  # weighted cross-entropy of the teacher's actions
    early_stop: torch.Tensor  # mean -log(1 - p(stop)) where the teacher does not stop
    value: torch.Tensor
    teacher_prob: torch.Tensor  # mean probability the policy gives the teacher's action
    early_stop_prob: torch.Tensor  # mean probability of stop where the teacher does not stop


def inflection_weights(teacher_actions: torch.Tensor, masks: torch.Tensor, weight: float) -> torch.Tensor:
    """[L, n] loss weights: `weight` where the teacher's action differs from its action one step earlier in
    the same episode, or where an episode starts (masks False), 1 elsewhere. The first step of a sequence
    has no earlier label here, so it counts as an inflection only at an episode start."""
    changed = torch.zeros_like(masks)
    changed[1:] = teacher_actions[1:] != teacher_actions[:-1]
    inflection = changed | ~masks
    return torch.where(inflection, weight, 1.0)


def cloning_loss(
    action_log_probs: torch.Tensor,
    teacher_actions: torch.Tensor,
    weights: torch.Tensor,
    teacher_probs: torch.Tensor | None = None,
):
    """(the weighted mean over [L, n] steps of the cross-entropy to the teacher, log pi(teacher action)
    [L, n]); `action_log_probs` is [L, n, A]. The cross-entropy is -log pi(teacher action), or, given a
    policy teacher's distribution `teacher_probs` [L, n, A], -sum_a p(a) log pi(a): what the first is in
    expectation over the teacher's drawn actions, without the noise of the draw."""
    teacher_log_probs = action_log_probs.gather(-1, teacher_actions[..., None]).squeeze(-1)
    if teacher_probs is None:
        cross_entropy = -teacher_log_probs
    else:
        cross_entropy = -(teacher_probs * action_log_probs).sum(-1)
    return (weights * cross_entropy).sum() / weights.sum(), teacher_log_probs


def imitation_losses(
    action_log_probs: torch.Tensor,
    teacher_actions: torch.Tensor,
    weights: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    value_loss_coef: float,
    early_stop_weight: float = 0.0,
    teacher_probs: torch.Tensor | None = None,
) -> ImitationLosses:
    """Behaviour cloning: the weighted mean of the cross-entropy to the teacher over [L, n] steps
    (cloning_loss; `action_log_probs` is [L, n, A]), plus `early_stop_weight` times the mean
    -log(1 - pi(stop)) over the steps where the teacher does not stop, plus the critic's squared error."""
    action, teacher_log_probs = cloning_loss(action_log_probs, teacher_actions, weights, teacher_probs)
    going_on = teacher_actions != STOP
    stop_prob = action_log_probs[..., STOP].exp()
    # Clamped so that a policy sure of stopping gives a large finite loss, not an infinite one.
    early = -torch.log1p(-stop_prob.clamp(max=1 - 1e-6))[going_on]
    early_stop = early.mean() if early.numel() else action.new_zeros(())
    value = 0.5 * ((values - returns) ** 2).mean()
    total = action + early_stop_weight * early_stop + value_loss_coef * value
    with torch.no_grad():
        teacher_prob = teacher_log_probs.exp().mean()
        early_prob = stop_prob[going_on].mean() if early.numel() else action.new_zeros(())
    return ImitationLosses(total, action, early_stop, value, teacher_prob, early_prob)


def bearing_loss(predicted: torch.Tensor, bearings: torch.Tensor) -> torch.Tensor:
    """Mean squared error between predicted [..., 2] and the unit vectors (cos, sin) of `bearings` [...],
    summed over the two components: 0 when exact, 4 when pointing the opposite way."""
    target = torch.stack([torch.cos(bearings), torch.sin(bearings)], -1)
    return ((predicted - target) ** 2).sum(-1).mean()


def coarse_depth(depth: torch.Tensor) -> torch.Tensor:
    """[N, 256]: depth images [N, H, W, 1] average-pooled to 16 x 16, the depth head's target."""
    return F.adaptive_avg_pool2d(depth.permute(0, 3, 1, 2).float(), DEPTH_TARGET_SIZE).flatten(1)


def depth_loss(predicted: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the pixels of the coarse depth images, in the camera's normalised units."""
    return ((predicted - targets) ** 2).mean()


def map_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy over the squares of the egocentric maps, `logits` against 0/1 `targets`."""
    return F.binary_cross_entropy_with_logits(logits, targets)


class ImitationHeads(nn.Module):
    """What imitation predicts besides the actions, from what the policy computed, each head where its
    weight is on: the teacher's bearing as (cos, sin) and the seen walls around the agent from the
    recurrent features, and the coarse depth image from the visual embedding."""

    def __init__(self, hidden_size: int, imitation: ImitationConfig):
        super().__init__()
        self.bearing = nn.Linear(hidden_size, 2) if imitation.bearing_weight > 0 else None
        self.depth = nn.Linear(hidden_size, DEPTH_TARGET_SIZE**2) if imitation.depth_weight > 0 else None
        self.map = nn.Linear(hidden_size, MAP_TARGET_SIZE**2) if imitation.map_weight > 0 else None

    def forward(self, result: EvaluateResult, actions: torch.Tensor, masks: torch.Tensor) -> dict:
        predictions = {}
        if self.bearing is not None:
            predictions["bearing"] = self.bearing(result.features)
        if self.depth is not None:
            predictions["depth"] = self.depth(result.visual)
        if self.map is not None:
            predictions["map"] = self.map(result.features)
        return predictions


class DAgger(PPO):
    """PPO's update machinery (epochs, mini-batches of whole sequences, optimiser, AMP, DDP) with the
    imitation loss."""

    def __init__(
        self,
        policy: ActorCritic,
        config: PPOConfig,
        imitation: ImitationConfig,
        lr: float,
        device: torch.device,
        distributed: bool,
        heads: ImitationHeads | None = None,
    ):
        """`heads`: those of an earlier stage of the same run, kept across the switch; else new ones. They
        are trained here and not part of the policy."""
        if heads is None:
            heads = ImitationHeads(policy.config.hidden_size, imitation)
            if not list(heads.children()):  # every head's weight is 0
                heads = None
        super().__init__(policy, config, lr, device, distributed, heads)
        self.heads = heads  # trained beside the policy (trainable.head); a later DAgger stage keeps them
        self.imitation = imitation

    def _losses(self, batch: MiniBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        with self.autocast():
            values, _, _, action_log_probs, predictions = self.evaluator(
                batch.observations, batch.hidden, batch.prev_actions, batch.masks, batch.teacher_actions
            )
        weights = inflection_weights(batch.teacher_actions, batch.masks, self.imitation.inflection_weight)
        losses = imitation_losses(
            action_log_probs.float(),
            batch.teacher_actions,
            weights,
            values.float(),
            batch.returns,
            self.config.value_loss_coef,
            self.imitation.early_stop_weight,
            batch.head_targets.get(TEACHER_PROBS),
        )
        names = ("action", "early_stop", "value", "teacher_prob", "early_stop_prob")
        stats = {name: getattr(losses, name) for name in names}
        total = losses.total
        predictions = predictions or {}
        if "bearing" in predictions:
            stats["bearing"] = bearing_loss(predictions["bearing"].float(), batch.teacher_bearings)
            total = total + self.imitation.bearing_weight * stats["bearing"]
        if "depth" in predictions:
            stats["depth"] = depth_loss(predictions["depth"].float(), batch.head_targets["depth"])
            total = total + self.imitation.depth_weight * stats["depth"]
        if "map" in predictions:
            stats["map"] = map_loss(predictions["map"].float(), batch.head_targets["map"])
            total = total + self.imitation.map_weight * stats["map"]
        return total, stats


class TeacherLabels:
    """Labels every step with the action of the teacher (imitation.teacher) and picks, step
    by step, whether the teacher or the learner drives. Who drives is drawn from torch's global generator,
    which the trainer seeds and checkpoints; the teacher's own memory (and a policy teacher's draws of its
    actions) is in state_dict()."""

    def __init__(self, sim: BatchSim, config: ImitationConfig, drives: bool = True):
        """`drives`: whether the teacher drives its share of the steps (DAgger), or only labels them and the
        learner drives every one (kickstarting, whose PPO update needs the learner's own actions)."""
        self.teacher = make_teacher(sim, config)
        self.config = config
        self.drives = drives

    def policy_record(self) -> dict | None:
        """A policy teacher's model name, provenance and weights' digest; None for the other teachers."""
        if not isinstance(self.teacher, PolicyTeacher):
            return None
        policy = self.teacher.agent.policy
        return {
            **(policy.provenance or {}),
            "model": self.config.teacher_model,
            WEIGHTS_DIGEST: weights_digest(policy),
        }

    def state_dict(self) -> dict:
        return self.teacher.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.teacher.load_state_dict(state)

    def share(self, frames: int) -> float:
        """The teacher's share of the driving after `frames` frames of training (0 if it only labels)."""
        if not self.drives:
            return 0.0
        cfg = self.config
        done = min(1.0, frames / cfg.teacher_decay_frames)
        return cfg.teacher_share_start + done * (cfg.teacher_share_end - cfg.teacher_share_start)

    def drive(
        self,
        observations: dict[str, torch.Tensor],
        masks: torch.Tensor,
        learner_actions: torch.Tensor,
        frames: int,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(the actions to take [N], the teacher's labels [N], its bearings [N]) for the simulator's
        `observations` now; `masks` [N] is False where an episode begins (the rollout's masks)."""
        labels, bearings = self.teacher.labels(observations, ~masks)
        actions = learner_actions
        if self.drives:
            teacher_drives = torch.rand(labels.shape, device=labels.device) < self.share(frames)
            actions = torch.where(teacher_drives, labels, learner_actions)
        self.teacher.taken(actions)
        return actions, labels, bearings

    def head_targets(self, observations: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """What the update learns at this step besides the teacher's label: what the depth and map heads
        (ImitationHeads) predict, those whose weight is on (the coarse depth image of the simulator's
        `observations`, and the walls seen around the agent on the map-planner's map as drive() has just
        updated it), and a policy teacher's distribution, which the cloning loss reads instead of its
        drawn label (TEACHER_PROBS)."""
        targets = {}
        if isinstance(self.teacher, PolicyTeacher):
            targets[TEACHER_PROBS] = self.teacher.probs()
        if self.config.depth_weight > 0:
            targets["depth"] = coarse_depth(observations["depth"])
        if self.config.map_weight > 0:
            assert isinstance(self.teacher, MapPlannerTeacher)  # ImitationConfig.validate
            targets["map"] = self.teacher.seen_map(MAP_TARGET_SIZE, MAP_TARGET_CELL)
        return targets
