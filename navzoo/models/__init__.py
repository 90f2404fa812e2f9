"""Navigation policies: DD-PPO's PointGoal actor-critic with habitat, BPS and timm visual encoders."""

from navzoo.models.configuration import GOAL_SENSOR, HABITAT_BACKBONES, PolicyConfig
from navzoo.models.encoder import VisualEncoder
from navzoo.models.policy import (
    VISUAL_FEATURES_KEY,
    ActResult,
    EvaluateResult,
    PointNavPolicy,
    PolicyOutput,
)

__all__ = [
    "GOAL_SENSOR",
    "HABITAT_BACKBONES",
    "VISUAL_FEATURES_KEY",
    "ActResult",
    "EvaluateResult",
    "PointNavPolicy",
    "PolicyConfig",
    "PolicyOutput",
    "VisualEncoder",
]
