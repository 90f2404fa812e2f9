"""ImageNet-pretrained timm backbones for the ImageNetEncoder-ScratchPolicy setting.

Weights come through timm, from the Hugging Face Hub (timm's default for the model) or from a local file.
Where neither can be had the setting fails with ImageNetWeightsError: a frozen encoder with random weights
would silently be a different experiment.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import torch
from safetensors import SafetensorError

from navzoo.errors import ConfigError, NavzooError
from navzoo.models import PointNavPolicy
from navzoo.models.timm_encoder import TimmBackbone


class ImageNetWeightsError(NavzooError):
    """The ImageNet weights of a timm model could not be had."""


def load_imagenet_backbone(policy: PointNavPolicy, weights_file: str | Path | None = None) -> str:
    """Load ImageNet weights into the policy's timm backbone; returns where they came from."""
    import timm  # imported here: ~2 s, which `import navzoo` should not pay

    encoder, name = policy.visual_encoder, policy.config.backbone
    if encoder is None or name is None or not isinstance(encoder.backbone, TimmBackbone):
        raise ConfigError(
            "backbone", name, "'timm:' followed by a timm model name, which has ImageNet weights"
        )
    backbone = encoder.backbone
    model_name = name.removeprefix("timm:")
    in_chans = policy.config.in_channels
    if weights_file is not None and not Path(weights_file).is_file():
        raise ImageNetWeightsError(
            f"--imagenet-weights {weights_file} does not exist; pass a .safetensors or .pth file with the "
            f"timm {model_name!r} ImageNet weights"
        )
    overlay = {"file": str(weights_file)} if weights_file is not None else None
    try:
        pretrained = timm.create_model(
            model_name,
            pretrained=True,
            pretrained_cfg_overlay=overlay,
            num_classes=0,
            global_pool="",
            in_chans=in_chans,
        )
    except (OSError, RuntimeError, ValueError, KeyError, pickle.UnpicklingError, SafetensorError) as err:
        where = f"the file {weights_file}" if weights_file is not None else "the Hugging Face Hub"
        raise ImageNetWeightsError(
            f"the ImageNet weights of timm model {model_name!r} could not be loaded from {where}: "
            f"{type(err).__name__}: {_first_line(err)}. The setting "
            "imagenet-encoder needs them and will not run with random weights: connect to the Hub, "
            f"or download them elsewhere (timm.create_model({model_name!r}, pretrained=True)) and pass "
            "the file with --imagenet-weights"
        ) from None
    with torch.no_grad():
        backbone.model.load_state_dict(pretrained.state_dict())
    if weights_file is not None:
        return str(weights_file)
    pretrained_cfg = pretrained.pretrained_cfg
    assert isinstance(pretrained_cfg, dict)  # every timm model keeps the config it was built with, as a dict
    hub_id = pretrained_cfg.get("hf_hub_id")
    return f"hf-hub:{hub_id}" if hub_id else f"timm:{model_name}"


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0].rstrip(".") if lines else ""
