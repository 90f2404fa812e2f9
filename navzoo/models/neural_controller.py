"""DD-PPO's neural controller (section 6, appendix G): a frozen PointGoal policy steered by a planner.

At every step the planner, a recurrent net on the controller's (frozen, shared) visual features and the
controller's previous action, outputs a goal for the controller and a value estimate. The goal is the
controller's goal-embedding input [magnitude, u_x, u_y]: ELU + 0.75 on the magnitude, tanh on each
direction component, not renormalised. Actions are sampled from the controller's distribution, so PPO's
log-probabilities are the controller's and their gradients reach the planner through the frozen,
differentiable controller (its goal embedding and recurrent core; a controller in PointNavBaselineNet's layout
reads the goal as the (rho, phi) it stands for, navzoo.models.policy).

The recurrent state of one environment packs the planner's state and the controller's into one row,
[1, planner_R * planner_H + controller_R * controller_H], so rollout storage treats it as any policy's.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from navzoo.errors import ConfigError
from navzoo.models.encoder import VisualEncoder
from navzoo.models.neural_controller_config import NeuralControllerConfig
from navzoo.models.outputs import PolicyOutput
from navzoo.models.policy import VISUAL_FEATURES_KEY, ActorCritic, CriticHead, PointNavPolicy
from navzoo.models.state_encoder import RNNStateEncoder

MAGNITUDE_OFFSET = 0.75  # appendix G: ELU(m) + 0.75, so the goal is never much behind the agent


class NeuralControllerPolicy(ActorCritic):
    """Planner + frozen PointGoal controller, trained as one actor-critic with PPO."""

    config_class = NeuralControllerConfig
    config: NeuralControllerConfig

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
        self.visual_encoder.freeze()
        hidden = config.hidden_size
        self.visual_fc = nn.Sequential(
            nn.Flatten(), nn.Linear(self.visual_encoder.output_size, hidden), nn.ReLU(True)
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
        encoder = self.controller.visual_encoder
        assert encoder is not None  # NeuralControllerConfig.validate refuses a blind controller
        return encoder

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
