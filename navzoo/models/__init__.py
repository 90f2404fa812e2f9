"""Navigation policies: DD-PPO's PointGoal actor-critic with habitat, BPS and timm visual encoders, and the
neural controller (a planner steering a frozen PointGoal policy) used for transfer."""

import torch

from navzoo.models.configuration import HABITAT_BACKBONES, PolicyConfig
from navzoo.models.encoder import VisualEncoder
from navzoo.models.interface import NavigationPolicy, PolicyArchitecture
from navzoo.models.metadata import ModelMetadata
from navzoo.models.model_memory import ModelSize, measure
from navzoo.models.neural_controller import NeuralControllerPolicy
from navzoo.models.neural_controller_config import ARCHITECTURE_TYPE as NEURAL_CONTROLLER
from navzoo.models.neural_controller_config import NeuralControllerConfig
from navzoo.models.outputs import ActResult, EvaluateResult, PolicyOutput
from navzoo.models.policy import GOAL_VECTOR_KEY, VISUAL_FEATURES_KEY, ActorCritic, PointNavPolicy
from navzoo.models.weights import ModelConfig, config_from_dict
from navzoo.names import GOAL_SENSOR


def build_policy(config: ModelConfig, *, fetch_timm_weights: bool = True) -> ActorCritic:
    """A freshly initialised policy of this architecture (`fetch_timm_weights` as for PointNavPolicy)."""
    return ActorCritic.class_for(config)(config, fetch_timm_weights=fetch_timm_weights)


def model_size(config: ModelConfig) -> ModelSize:
    """The size of the policy `config` describes, built on the meta device (shapes, no memory)."""
    with torch.device("meta"):
        policy = build_policy(config, fetch_timm_weights=False)
    return measure(policy, policy.hidden_state_shape)


__all__ = [
    "GOAL_SENSOR",
    "GOAL_VECTOR_KEY",
    "HABITAT_BACKBONES",
    "NEURAL_CONTROLLER",
    "VISUAL_FEATURES_KEY",
    "ActResult",
    "ActorCritic",
    "EvaluateResult",
    "ModelConfig",
    "ModelMetadata",
    "ModelSize",
    "NavigationPolicy",
    "NeuralControllerConfig",
    "NeuralControllerPolicy",
    "PointNavPolicy",
    "PolicyArchitecture",
    "PolicyConfig",
    "PolicyOutput",
    "VisualEncoder",
    "build_policy",
    "config_from_dict",
    "model_size",
]
