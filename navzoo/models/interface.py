"""The interface every navzoo policy implements: what training, evaluation and the weight format use of a
policy and of its config. PointNavPolicy (with PolicyConfig) and NeuralControllerPolicy (with
NeuralControllerConfig) implement it; code that takes any policy relies on these members alone.

Members are methods and properties, never submodules: from Python 3.12 on, isinstance() against a protocol
finds attributes statically, and an nn.Module keeps its submodules where a static lookup does not see them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch

if TYPE_CHECKING:
    from navzoo.models.encoder import VisualEncoder
    from navzoo.models.metadata import ModelMetadata
    from navzoo.models.outputs import ActResult, EvaluateResult, PolicyOutput


@runtime_checkable
class PolicyArchitecture(Protocol):
    """A policy's config as evaluation, the simulator, training and model cards read it."""

    @property
    def metadata(self) -> ModelMetadata:
        """Name, task and provenance."""
        ...

    @property
    def sensors(self) -> tuple[str, ...]:
        """Every observation the policy reads."""
        ...

    @property
    def visual_sensors(self) -> tuple[str, ...]:
        """The cameras among them: what the simulator must render."""
        ...

    @property
    def resolution(self) -> tuple[int, int] | None:
        """(height, width) of the cameras; None without one."""
        ...

    @property
    def is_blind(self) -> bool: ...

    @property
    def has_goal(self) -> bool:
        """Whether it reads the GPS+Compass goal sensor."""
        ...

    @property
    def backbone(self) -> str | None: ...

    @property
    def hidden_size(self) -> int:
        """Width of the recurrent output both heads read (and auxiliary heads in training)."""
        ...

    @property
    def num_recurrent_layers(self) -> int: ...

    @property
    def rnn_type(self) -> str: ...

    @property
    def num_actions(self) -> int: ...

    def to_dict(self) -> dict[str, Any]:
        """The architecture block of config.json."""
        ...


@runtime_checkable
class NavigationPolicy(Protocol):
    """A recurrent actor-critic on the simulator's observations; shapes as in navzoo.models.policy.

    It is also a torch.nn.Module (parameters, state dicts, train/eval, to) with a `critic` value head,
    which PPO's critic warm-up optimises on its own.
    """

    @property
    def config(self) -> PolicyArchitecture: ...

    @property
    def name(self) -> str | None: ...

    @property
    def task(self) -> str: ...

    @property
    def provenance(self) -> dict | None: ...

    @property
    def visual_encoder(self) -> VisualEncoder | None:
        """The encoder of its cameras; a frozen one lets training store features instead of images."""
        ...

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """The recurrent state [batch_size, *hidden_state_shape] of episodes that have not begun."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """nn.Module's: its parameters and buffers by name, what the weight format stores."""
        ...

    def __call__(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
    ) -> PolicyOutput: ...

    def act(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
        deterministic: bool = False,
    ) -> ActResult: ...

    def evaluate_actions(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
        actions: torch.Tensor,
    ) -> EvaluateResult: ...
