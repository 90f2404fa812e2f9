"""The neural controller's configuration (DD-PPO section 6, appendix G): the frozen PointGoal controller's
architecture and the planner's recurrent core. Apart from the policy (navzoo.models.neural_controller), so
the weight format reads it without importing any model class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from navzoo.config_base import Config
from navzoo.errors import ConfigError
from navzoo.models.configuration import MAX_SIZES, RNN_TYPES, PolicyConfig
from navzoo.models.metadata import ModelMetadata
from navzoo.typed_config import check_field_types

ARCHITECTURE_TYPE = "neural-controller"  # config.json's architecture block names it by this type key


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
