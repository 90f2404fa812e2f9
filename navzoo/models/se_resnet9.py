"""BPS's SE-ResNet9 (Shacklett et al. 2021): a ResNet18 with every other block removed, squeeze-excite
(r=16) in every block, a SpaceToDepth stem and Fixup initialisation instead of normalisation layers.

Written after bps-nav's `se_resnet9_fixup` (rl/ddppo/policy/resnet.py): 1x1 conv stem on 4x4
space-to-depth blocks, stages of one block with planes base, 2x, 4x, 8x (stride 1, 2, 2, 2), shortcut
`AvgPool2d(3, 2, 1)` + 1x1 conv where the shape changes. No released weights exist for it, so names
follow navzoo's layout rather than any checkpoint.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from navzoo.models.resnet import SE, conv1x1, conv3x3


class FixupSEBasicBlock(nn.Module):
    """conv-relu-conv residual branch with Fixup's scalar biases and scale, gated by squeeze-excite."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.fixup_bias1a = nn.Parameter(torch.zeros(1))
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.fixup_bias1b = nn.Parameter(torch.zeros(1))
        self.fixup_bias2a = nn.Parameter(torch.zeros(1))
        self.conv2 = conv3x3(planes, planes)
        self.fixup_scale = nn.Parameter(torch.ones(1))
        self.fixup_bias2b = nn.Parameter(torch.zeros(1))
        self.se = SE(planes, 16)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            pool = [nn.AvgPool2d(3, stride, padding=1)] if stride != 1 else []
            self.downsample = nn.Sequential(*pool, conv1x1(inplanes, planes))
        self.relu = nn.ReLU(True)

    def fixup_init(self, num_blocks: int) -> None:
        """Fixup (Zhang et al. 2019): He init scaled by L^-1/2 on the first conv, zero on the last."""
        w = self.conv1.weight
        nn.init.normal_(w, 0.0, math.sqrt(2 / (w.shape[0] * math.prod(w.shape[2:]))) * num_blocks**-0.5)
        nn.init.zeros_(self.conv2.weight)
        if self.downsample is not None:
            shortcut = self.downsample[-1]
            assert isinstance(shortcut, nn.Conv2d)  # after the optional pool (see __init__)
            w = shortcut.weight
            nn.init.normal_(w, 0.0, math.sqrt(2 / (w.shape[0] * math.prod(w.shape[2:]))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x + self.fixup_bias1a
        out = self.relu(self.conv1(shifted) + self.fixup_bias1b)
        out = self.conv2(out + self.fixup_bias2a) * self.fixup_scale + self.fixup_bias2b
        identity = x if self.downsample is None else self.downsample(shifted)
        return self.relu(out * self.se(out) + identity)


class SEResNet9(nn.Module):
    """Output stride 32 (4 from the stem, then 2 per later stage), `final_channels` = 8 * base_planes."""

    reduction = 32

    def __init__(self, in_channels: int, base_planes: int = 64):
        super().__init__()
        # Imported here: importing timm takes ~2 s, which `import navzoo` should not pay.
        from timm.layers.space_to_depth import SpaceToDepth

        self.stem = nn.Sequential(
            SpaceToDepth(4), nn.Conv2d(in_channels * 16, base_planes, 1, bias=False), nn.ReLU(True)
        )
        inplanes, stages = base_planes, []
        for i in range(4):
            planes = base_planes * 2**i
            stages.append(nn.Sequential(FixupSEBasicBlock(inplanes, planes, stride=1 if i == 0 else 2)))
            inplanes = planes
        self.layers = nn.ModuleList(stages)
        self.final_channels = inplanes
        blocks = [m for m in self.modules() if isinstance(m, FixupSEBasicBlock)]
        for block in blocks:
            block.fixup_init(len(blocks))

    @staticmethod
    def output_size(size: tuple[int, int]) -> tuple[int, int]:
        h, w = size
        return (-(-(h // 4) // 8), -(-(w // 4) // 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for stage in self.layers:
            x = stage(x)
        return x
