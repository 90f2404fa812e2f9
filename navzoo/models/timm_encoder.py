"""ImageNet-pretrained backbones from timm, for the transfer baselines and frozen-feature use.

The backbone is `timm.create_model(name, num_classes=0, global_pool="")`, i.e. its final feature map.
Inputs are standardised with the model's ImageNet mean/std: RGB channels per colour, a depth channel with
the grey-level statistics (mean over the colour channels), which is what a grey image fed to the network
would get. With `in_chans` other than 3, timm adapts the pretrained first conv (summing it for one channel).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from navzoo.errors import ConfigError


class TimmBackbone(nn.Module):
    mean: torch.Tensor  # buffers, registered in __init__
    std: torch.Tensor

    def __init__(self, model_name: str, visual_sensors: tuple[str, ...], pretrained: bool = False):
        super().__init__()
        # Imported here: importing timm takes ~2 s, which `import navzoo` should not pay.
        import timm

        if not timm.is_model(model_name):
            raise ConfigError(
                "backbone", f"timm:{model_name}", "'timm:' followed by a name from timm.list_models()"
            )
        in_chans = sum(1 if s == "depth" else 3 for s in visual_sensors)
        # Any: every timm model has pretrained_cfg, num_features and forward_features, which
        # create_model's declared return type (nn.Module) does not.
        self.model: Any = timm.create_model(
            model_name, pretrained=pretrained, num_classes=0, global_pool="", in_chans=in_chans
        )
        cfg = self.model.pretrained_cfg
        rgb_mean, rgb_std = cfg.get("mean", (0.5, 0.5, 0.5)), cfg.get("std", (0.5, 0.5, 0.5))
        mean, std = [], []
        for sensor in visual_sensors:
            if sensor == "rgb":
                mean += rgb_mean
                std += rgb_std
            else:
                mean.append(sum(rgb_mean) / 3)
                std.append(sum(rgb_std) / 3)
        # Fixed statistics come from the timm config, so they are not saved with the weights.
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1), persistent=False)
        self.final_channels: int = self.model.num_features

    def output_size(self, size: tuple[int, int]) -> tuple[int, int]:
        # Strides and paddings differ between timm families, so measure instead of computing.
        with torch.no_grad():
            was_training = self.training
            self.eval()
            out = self(torch.zeros(1, self.mean.shape[1], *size))
            self.train(was_training)
        return tuple(out.shape[-2:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.forward_features((x - self.mean) / self.std)
