"""Conversion between habitat-baselines checkpoints and navzoo's weight folders.

Released DD-PPO files hold `{"state_dict": {"actor_critic.<name>": tensor}}` and no configuration. They
are read with `torch.load(weights_only=True)` (anything that needs code to unpickle is refused), the
architecture is read off the tensor shapes (or taken from a zoo entry), and the weights are written as
config.json + model.safetensors. The reverse direction writes the same layout back, which
habitat-baselines loads into PointNavResNetPolicy with its usual `actor_critic.` stripping.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from navzoo.errors import NavzooError, UnsafeCheckpointError, WeightsFormatError
from navzoo.models import ModelMetadata, PointNavPolicy, PolicyConfig
from navzoo.models.resnet import SPECS
from navzoo.models.weights import check_state_dict, save_pretrained
from navzoo.names import GOAL_SENSOR, SEEN_MAP
from navzoo.storage.torch_files import load_weights_only
from navzoo.zoo.registry import ModelEntry, entries, model_entry

PREFIX = "actor_critic."
# Training-only modules some habitat-baselines versions keep under actor_critic (auxiliary losses).
TRAINING_ONLY = ("aux_loss_modules.",)
BACKBONE = "net.visual_encoder.backbone."
SENSORS_BY_CHANNELS = {1: ("depth",), 3: ("rgb",), 4: ("depth", "rgb")}


def read_habitat_checkpoint(path: str | Path) -> dict[str, torch.Tensor]:
    """The policy's tensors from a habitat-baselines checkpoint, names without `actor_critic.`."""
    path = Path(path)
    if not path.is_file():
        raise WeightsFormatError(
            f"{path} does not exist; pass the path of a habitat-baselines .pth checkpoint"
        )
    try:
        checkpoint = load_weights_only(path)
    except UnsafeCheckpointError:
        raise
    except (RuntimeError, EOFError, KeyError, ValueError, OSError) as err:
        raise WeightsFormatError(
            f"{path} is not a readable PyTorch checkpoint, or it is truncated ({type(err).__name__}: {err})"
        ) from None
    state = checkpoint.get("state_dict", checkpoint) if isinstance(checkpoint, dict) else None
    if (
        not isinstance(state, dict)
        or not state
        or not all(isinstance(v, torch.Tensor) for v in state.values())
    ):
        raise WeightsFormatError(
            f"{path} has no state_dict of tensors; expected habitat-baselines' "
            "{'state_dict': {name: tensor}} layout"
        )
    if any(k.startswith(PREFIX) for k in state):
        state = {k[len(PREFIX) :]: v for k, v in state.items() if k.startswith(PREFIX)}
    return {k: v for k, v in state.items() if not k.startswith(TRAINING_ONLY)}


def infer_config(state: dict[str, torch.Tensor]) -> PolicyConfig:
    """Read the architecture off the tensor names and shapes of a PointNav policy state dict.

    The input size is not stored in a checkpoint: the result has the square size whose feature map
    matches the compression layer (256x256 for the released models); other sizes with the same feature
    map work with the same weights (`habitat_to_policy(..., resolution=)`).
    """
    rnn = "net.state_encoder.rnn.weight_hh_l{}"
    if rnn.format(0) not in state or "action_distribution.linear.weight" not in state:
        raise WeightsFormatError(
            "these tensors are not a PointNav policy (no net.state_encoder.rnn or action_distribution); "
            "navzoo converts habitat-baselines PointNavResNetPolicy checkpoints"
        )
    w_hh = state[rnn.format(0)]
    hidden = w_hh.shape[1]
    common: dict[str, Any] = {
        "hidden_size": hidden,
        "rnn_type": {4: "LSTM", 3: "GRU"}.get(w_hh.shape[0] // hidden, "unknown"),
        "num_recurrent_layers": sum(1 for i in range(16) if rnn.format(i) in state),
        "num_actions": state["action_distribution.linear.weight"].shape[0],
    }
    goal = (GOAL_SENSOR,) if "net.tgt_embeding.weight" in state else ()
    if not any(k.startswith(BACKBONE) for k in state):
        return PolicyConfig(backbone=None, sensors=goal, resolution=None, **common)
    if BACKBONE + "conv1.0.weight" not in state:
        raise WeightsFormatError(
            "the visual backbone is not one of habitat's ResNets, so its architecture cannot be inferred; "
            "pass a zoo name with the same architecture (--model)"
        )
    stem = state[BACKBONE + "conv1.0.weight"]
    sensors = SENSORS_BY_CHANNELS.get(stem.shape[1])
    if sensors is None:
        raise WeightsFormatError(
            f"the backbone takes {stem.shape[1]} input channels; navzoo knows 1 (depth), 3 (rgb), 4"
        )
    backbone = _habitat_backbone(state)
    compression = state["net.visual_encoder.compression.0.weight"].shape[0]
    side = math.isqrt(state["net.visual_fc.1.weight"].shape[1] // compression)
    return PolicyConfig(
        backbone=backbone,
        sensors=sensors + goal,
        resolution=(64 * side, 64 * side),  # 2x2 avg-pool, then stride 32
        base_planes=stem.shape[0],
        normalize_visual_inputs="net.visual_encoder.running_mean_and_var._mean" in state,
        **common,
    )


def _habitat_backbone(state: dict[str, torch.Tensor]) -> str:
    layers = tuple(len({k.split(".")[0] for k in _under(state, f"{BACKBONE}layer{i}.")}) for i in range(1, 5))
    bottleneck = BACKBONE + "layer1.0.convs.6.weight" in state
    # ResNeXt: the first block's 3x3 conv is grouped, so its weight has fewer input than output channels.
    conv = state[BACKBONE + "layer1.0.convs.3.weight"] if bottleneck else None
    resnext = conv is not None and conv.shape[1] != conv.shape[0]
    se = BACKBONE + "layer1.0.se.excite.0.weight" in state
    for name, spec in SPECS.items():
        if (spec.bottleneck, spec.layers, spec.resnext, spec.se) == (bottleneck, layers, resnext, se):
            return name
    raise WeightsFormatError(
        f"backbone with stages {layers} (bottleneck={bottleneck}, grouped={resnext}, squeeze-excite={se}) "
        f"is not one of habitat's {', '.join(SPECS)}"
    )


def _under(state: dict[str, torch.Tensor], prefix: str) -> list[str]:
    return [k[len(prefix) :] for k in state if k.startswith(prefix)]


def habitat_to_policy(
    path: str | Path, *, model: str | None = None, resolution: tuple[int, int] | None = None
) -> PointNavPolicy:
    """A policy holding the weights of a habitat-baselines checkpoint.

    The architecture is inferred from the tensors, or taken from the zoo entry `model`. A file named
    like a released checkpoint gets that zoo entry's name and provenance when the tensors agree with it.
    """
    path = Path(path)
    state = read_habitat_checkpoint(path)
    if model:
        entry = model_entry(model)
        config = entry.config
    else:
        entry = _released_entry(path.name)
        config = infer_config(state)
        if entry is not None and config != entry.config:
            entry = None  # named like a released file but holds something else: no borrowed provenance
    if resolution is not None:
        config = config.replace(resolution=tuple(resolution))
    if entry is not None:
        metadata = entry.metadata
    else:
        metadata = ModelMetadata(
            provenance={"original_file": path.name, "converted_from": "habitat-baselines checkpoint"}
        )
    policy = PointNavPolicy(config.replace(metadata=metadata))
    check_state_dict(policy, state, str(path))
    policy.load_state_dict(state, strict=True)
    return policy.eval()


def _released_entry(filename: str) -> ModelEntry | None:
    return next((e for e in entries() if e.provenance.original_file == filename), None)


def convert_habitat_checkpoint(
    src: str | Path, dst: str | Path, *, model: str | None = None, resolution: tuple[int, int] | None = None
) -> Path:
    """Convert a habitat-baselines .pth into a navzoo folder (config.json + model.safetensors)."""
    return save_pretrained(habitat_to_policy(src, model=model, resolution=resolution), dst)


def policy_to_habitat_state_dict(policy: PointNavPolicy) -> dict[str, torch.Tensor]:
    """`actor_critic.`-prefixed tensors that habitat-baselines' PointNavResNetPolicy loads strictly."""
    if policy.config.family not in ("habitat", "blind"):
        raise NavzooError(
            f"backbone {policy.config.backbone!r} has no habitat-baselines counterpart; only "
            f"{', '.join(SPECS)} and blind policies can be exported"
        )
    if policy.config.has_seen_map:
        raise NavzooError(
            f"the policy reads the {SEEN_MAP} sensor, which habitat-baselines' PointNavResNetPolicy has no "
            "input for; only policies of cameras and GPS+Compass can be exported"
        )
    return {PREFIX + k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}


def export_habitat_checkpoint(src: PointNavPolicy | str | Path, dst: str | Path) -> Path:
    """Write a navzoo policy (or folder) as a habitat-baselines checkpoint {'state_dict': ...}."""
    policy = src if isinstance(src, PointNavPolicy) else PointNavPolicy.from_folder(src)
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": policy_to_habitat_state_dict(policy)}, dst)
    return dst
