"""A policy's memory: its parameters, buffers and recurrent state, counted before it is built for real."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn

from navzoo.memory import Part, refuse_unless_fits
from navzoo.models.weights import ModelConfig

# The config fields whose values size a policy, most telling first (a neural controller has the first two).
_SIZE_FIELDS = ("hidden_size", "num_recurrent_layers", "resolution")


@dataclass(frozen=True)
class ModelSize:
    parameters: int  # how many
    parameter_bytes: int
    trainable_bytes: int  # of the parameters that train (those with gradients and optimizer state)
    buffer_bytes: int  # running means and variances, the dummy goal
    hidden_bytes: int  # one environment's recurrent state, float32


def measure(policy: nn.Module, hidden_state_shape: tuple[int, ...]) -> ModelSize:
    """The size of a built policy, on the meta device or any other (navzoo.models.model_size builds one on
    the meta device from a config)."""
    params = list(policy.parameters())
    return ModelSize(
        parameters=sum(p.numel() for p in params),
        parameter_bytes=_bytes(params),
        trainable_bytes=_bytes(p for p in params if p.requires_grad),
        buffer_bytes=_bytes(policy.buffers()),
        hidden_bytes=math.prod(hidden_state_shape) * 4,
    )


def size_fields(config: ModelConfig, prefix: str = "") -> tuple[tuple[str, object], ...]:
    """The config's fields that size its policy, as (name, value) for a message."""
    values = [(name, getattr(config, name, None)) for name in _SIZE_FIELDS]
    values = [(name, value) for name, value in values if value is not None]
    return tuple((prefix + name, list(v) if isinstance(v, tuple) else v) for name, v in values)


def parameters_part(size: ModelSize, config: ModelConfig, copies: int = 1, prefix: str = "") -> Part:
    """The parameters and buffers, with `copies` - 1 more of the trainable ones (gradients, optimizer
    state) for training."""
    nbytes = size.parameter_bytes + size.buffer_bytes + (copies - 1) * size.trainable_bytes
    count = (
        f"{size.parameters / 1e9:.2g} billion"
        if size.parameters >= 1e9
        else f"{size.parameters / 1e6:.2g} million"
    )
    what = f"for {count} parameters" + (" with their gradients and optimizer state" if copies > 1 else "")
    return Part(what, nbytes, size_fields(config, prefix))


def refuse_unless_model_fits(config: ModelConfig, size: ModelSize) -> None:
    """ConfigTooLargeError, naming the fields that size it, where the policy `config` describes (of `size`)
    cannot fit in memory."""
    refuse_unless_fits([parameters_part(size, config)])


def _bytes(tensors: Iterable[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)
