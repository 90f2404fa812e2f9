"""DD-PPO's neural controller (section 6, appendix G): a frozen PointGoal policy steered by a planner.

At every step the planner, a recurrent net on the controller's (frozen, shared) visual features and the
controller's previous action, outputs a goal for the controller and a value estimate. The goal is the
controller's goal-embedding input [magnitude, u_x, u_y]: ELU + 0.75 on the magnitude, tanh on each
direction component, not renormalised. Actions are sampled from the controller's distribution, so PPO's
log-probabilities are the controller's and their gradients reach the planner through the frozen,
differentiable controller (its goal embedding and recurrent core).

The recurrent state of one environment packs the planner's state and the controller's into one row,
[1, planner_R * planner_H + controller_R * controller_H], so rollout storage treats it as any policy's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from navzoo.config_base import Config
from navzoo.errors import ConfigError
from navzoo.models.configuration import MAX_SIZES, RNN_TYPES, PolicyConfig
from navzoo.models.encoder import VisualEncoder
from navzoo.models.metadata import ModelMetadata
from navzoo.models.policy import (
    VISUAL_FEATURES_KEY,
    ActorCritic,
    CriticHead,
    PointNavPolicy,
    PolicyOutput,
)
from navzoo.models.state_encoder import RNNStateEncoder
from navzoo.typed_config import check_field_types

ARCHITECTURE_TYPE = "neural-controller"
MAGNITUDE_OFFSET = 0.75  # appendix G: ELU(m) + 0.75, so the goal is never much behind the agent


@dataclass(frozen=True)
class NeuralControllerConfig(Config):
    """The controller's PolicyConfig and the planner's recurrent core (appendix G: 2-layer LSTM, 512)."""

    controller: PolicyConfig
    hidden_size: int = 512
    num_recurrent_layers: int = 2
    rnn_type: str = "LSTM"
    # As PolicyConfig's: name, task and provenance, left out of comparisons.
    metadata: ModelMetadata = field(default_factory=ModelMetadata, compare=False, repr=False)

    def __post_init__(self):
        if isinstance(self.controller, dict):
            object.__setattr__(self, "controller", PolicyConfig.from_dict(self.controller))
        check_field_types(self, "planner ")
        self.validate()

    def validate(self) -> None:
        c = self.controller
        if not isinstance(c, PolicyConfig) or c.is_blind or not c.has_goal:
            raise ConfigError(
                "controller",
                getattr(c, "backbone", c),
                "a PointGoal policy with a visual encoder and the GPS+Compass goal input "
                "(the planner shares the encoder and steers through the goal)",
            )
        for name in ("hidden_size", "num_recurrent_layers"):
            if not 1 <= getattr(self, name) <= MAX_SIZES[name]:
                raise ConfigError(
                    f"planner {name}", getattr(self, name), f"an integer in 1 .. {MAX_SIZES[name]}"
                )
        if self.rnn_type not in RNN_TYPES:
            raise ConfigError("planner rnn_type", self.rnn_type, RNN_TYPES)

    # The members of navzoo.models.interface.PolicyArchitecture that are not fields here: the
    # planner+controller system reads the controller's cameras and nothing else.
    @property
    def sensors(self) -> tuple[str, ...]:
        return self.controller.visual_sensors

    @property
    def visual_sensors(self) -> tuple[str, ...]:
        return self.controller.visual_sensors

    @property
    def resolution(self) -> tuple[int, int] | None:
        return self.controller.resolution

    @property
    def is_blind(self) -> bool:
        return False

    @property
    def has_goal(self) -> bool:
        return False

    @property
    def backbone(self) -> str | None:
        return self.controller.backbone

    @property
    def num_actions(self) -> int:
        return self.controller.num_actions

    # config.json's architecture block tells this config from a PolicyConfig by its type key.
    def to_dict(self) -> dict[str, Any]:
        architecture = {k: v for k, v in super().to_dict().items() if k != "metadata"}  # see PolicyConfig
        return {"type": ARCHITECTURE_TYPE, **architecture}

    @classmethod
    def from_dict(cls, data: Any, block: str = "architecture") -> NeuralControllerConfig:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "type"}
        return super().from_dict(data, block)


class NeuralControllerPolicy(ActorCritic):
    """Planner + frozen PointGoal controller, trained as one actor-critic with PPO."""

    def __init__(
        self,
        config: NeuralControllerConfig,
        controller: PointNavPolicy | None = None,
        *,
        fetch_timm_weights: bool = True,
    ):
        """`controller` is the PointGoal policy to steer (a new one of config.controller if None);
        `fetch_timm_weights` as for PointNavPolicy."""
        super().__init__()
        self.config = config
        if controller is not None and controller.config != config.controller:
            raise ConfigError(
                "controller", controller.config.backbone, "the policy config.controller describes"
            )
        if controller is None:
            controller = PointNavPolicy(config.controller, fetch_timm_weights=fetch_timm_weights)
        self.controller = controller
        # Frozen by its parameters only: it stays in train mode with the planner, since cuDNN runs an RNN
        # backward (the planner's gradient passes through the controller's) only in train mode. Nothing
        # in it behaves differently in train mode except the encoder, which freeze() keeps in eval mode.
        self.controller.requires_grad_(False)
        self.controller.visual_encoder.freeze()
        hidden = config.hidden_size
        self.visual_fc = nn.Sequential(
            nn.Flatten(), nn.Linear(self.controller.visual_encoder.output_size, hidden), nn.ReLU(True)
        )
        self.prev_action_embedding = nn.Embedding(config.num_actions + 1, 32)
        self.state_encoder = RNNStateEncoder(
            hidden + 32, hidden, config.num_recurrent_layers, config.rnn_type
        )
        self.goal_head = nn.Linear(hidden, 3)
        self.critic = CriticHead(hidden)
        self._planner_shape = (self.state_encoder.num_recurrent_layers, hidden)
        self._controller_shape = self.controller.hidden_state_shape

    @property
    def visual_encoder(self) -> VisualEncoder:
        return self.controller.visual_encoder

    @property
    def hidden_state_shape(self) -> tuple[int, int]:
        return (1, math.prod(self._planner_shape) + math.prod(self._controller_shape))

    def forward(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
    ) -> PolicyOutput:
        """One step ([N] masks) or a sequence ([T, N]); the value is the planner's, the actions the
        controller's. `PolicyOutput.features` holds the planner's goal vectors [..., 3]."""
        lead = self.check_recurrent_inputs(hidden, prev_actions, masks)
        features = observations.get(VISUAL_FEATURES_KEY)
        if features is None:
            self.controller._check_visual(observations, lead)
            flat = {s: observations[s].flatten(0, len(lead) - 1) for s in self.config.visual_sensors}
            with torch.no_grad():
                features = self.visual_encoder(flat)
        else:
            features = features.flatten(0, len(lead) - 1)
        planner_state, controller_state = self._unpack(hidden)
        seq_masks = masks.view(-1, lead[-1])
        start = torch.zeros_like(prev_actions)
        prev = self.prev_action_embedding(torch.where(masks, prev_actions.long() + 1, start).flatten())
        x = torch.cat([self.visual_fc(features), prev], dim=1).view(*seq_masks.shape, -1)
        out, planner_state = self.state_encoder(x, planner_state, seq_masks)
        out = out.view(*lead, -1)
        goal = self.goal_vector(out)
        steered = self.controller.controller(
            goal,
            {VISUAL_FEATURES_KEY: features.view(*lead, *features.shape[1:])},
            controller_state,
            prev_actions,
            masks,
        )
        state = self._pack(planner_state, steered.hidden)
        return PolicyOutput(steered.distribution, self.critic(out), state, goal)

    def goal_vector(self, planner_output: torch.Tensor) -> torch.Tensor:
        """[magnitude, u_x, u_y]: ELU + 0.75 and tanh, the direction deliberately not renormalised."""
        raw = self.goal_head(planner_output)
        magnitude = F.elu(raw[..., :1]) + MAGNITUDE_OFFSET
        return torch.cat([magnitude, torch.tanh(raw[..., 1:])], dim=-1)

    def _unpack(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = hidden.shape[0]
        planner, controller = hidden.view(n, -1).split(
            [math.prod(self._planner_shape), math.prod(self._controller_shape)], dim=1
        )
        return planner.reshape(n, *self._planner_shape), controller.reshape(n, *self._controller_shape)

    def _pack(self, planner: torch.Tensor, controller: torch.Tensor) -> torch.Tensor:
        n = planner.shape[0]
        return torch.cat([planner.reshape(n, -1), controller.reshape(n, -1)], dim=1).view(n, 1, -1)
