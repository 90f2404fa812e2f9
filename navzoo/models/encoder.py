"""Visual encoder: observation dict -> compressed feature map (habitat's ResNetEncoder layout).

Channels of the visual sensors are concatenated (depth, then RGB rescaled from uint8 by 1/255), 2x2
average-pooled (habitat and timm backbones), standardised by the running mean/var when configured, run
through the backbone and compressed by a 3x3 conv to about 2048 values (1024 for BPS's SE-ResNet9; habitat's
SimpleCNN has no compression).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from navzoo.models.configuration import TIMM_PREFIX, PolicyConfig, compression_channels
from navzoo.models.resnet import GroupNormResNet
from navzoo.models.running_mean_var import RunningMeanAndVar
from navzoo.models.se_resnet9 import SEResNet9
from navzoo.models.simple_cnn import SimpleCNN
from navzoo.models.timm_encoder import TimmBackbone

# Each has `final_channels` and `output_size(resolution)`, the (h, w) of its output feature map.
Backbone = GroupNormResNet | SEResNet9 | SimpleCNN | TimmBackbone


def build_backbone(config: PolicyConfig, fetch_timm_weights: bool = True) -> Backbone:
    backbone, base_planes = config.backbone, config.base_planes
    # A blind policy has no visual encoder; PolicyConfig.__post_init__ sets base_planes.
    assert backbone is not None and base_planes is not None
    if config.family == "habitat":
        return GroupNormResNet(backbone, config.in_channels, base_planes)
    if config.family == "bps":
        return SEResNet9(config.in_channels, base_planes)
    if config.family == "simple":
        return SimpleCNN(config.in_channels)
    pretrained = config.timm_pretrained and fetch_timm_weights
    return TimmBackbone(backbone[len(TIMM_PREFIX) :], config.visual_sensors, pretrained)


class VisualEncoder(nn.Module):
    def __init__(self, config: PolicyConfig, fetch_timm_weights: bool = True):
        super().__init__()
        self.frozen = False
        self.visual_sensors = config.visual_sensors
        self.input_avgpool = config.input_avgpool
        self.running_mean_and_var = (
            RunningMeanAndVar(config.in_channels) if config.normalize_visual_inputs else nn.Identity()
        )
        self.backbone = build_backbone(config, fetch_timm_weights)
        spatial = self.backbone.output_size(config.encoder_resolution)
        if config.family == "simple":
            # habitat's SimpleCNN feeds its last convolution straight to the Linear layer (visual_fc).
            channels = self.backbone.final_channels
            self.compression = nn.Identity()
        elif config.family == "bps":
            # BPS: ~1024 values, channels a multiple of the group count, biased conv and no normalisation.
            assert config.base_planes is not None  # set by PolicyConfig.__post_init__
            channels = compression_channels(1024, spatial, multiple=config.base_planes // 2)
            self.compression = nn.Sequential(
                nn.Conv2d(self.backbone.final_channels, channels, 3, padding=1), nn.ReLU(True)
            )
        else:
            channels = compression_channels(2048, spatial)
            self.compression = nn.Sequential(
                nn.Conv2d(self.backbone.final_channels, channels, 3, padding=1, bias=False),
                nn.GroupNorm(1, channels),
                nn.ReLU(True),
            )
        self.output_shape = (channels, *spatial)

    @property
    def output_size(self) -> int:
        return math.prod(self.output_shape)

    def freeze(self) -> VisualEncoder:
        """Use as a fixed feature extractor: no gradients, and eval mode even inside a training policy
        (so neither the running mean/var nor a timm BatchNorm keep updating)."""
        self.requires_grad_(False)
        self.frozen = True
        return self.train(False)

    def train(self, mode: bool = True) -> VisualEncoder:
        return super().train(mode and not self.frozen)

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        channels = []
        for sensor in self.visual_sensors:
            x = observations[sensor].permute(0, 3, 1, 2)
            channels.append(x.float() * (1.0 / 255.0) if sensor == "rgb" else x)
        x = torch.cat(channels, dim=1)
        if self.input_avgpool:
            x = F.avg_pool2d(x, 2)
        x = self.running_mean_and_var(x)
        return self.compression(self.backbone(x))
