"""DD-PPO's half-width GroupNorm ResNets and (SE-)ResNeXts (habitat-baselines rl/ddppo/policy/resnet.py).

Module names and parameter shapes follow habitat-baselines exactly, so backbone weights move between the
two with a strict `load_state_dict`, and the outputs agree to float precision (checked in the tests
against the reference file). Two habitat details are kept on purpose:

- ResNeXt variants double the planes inside the stages but keep the stem width, and only the first block
  of each stage is grouped (habitat passes the cardinality to that block alone).
- The squeeze-excite module uses Linear layers (`se.excite.0/2`), so timm's conv-based SEModule, whose
  weights have another shape and name, cannot stand in for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ResNetSpec:
    bottleneck: bool
    layers: tuple[int, int, int, int]
    expansion: int
    resnext: bool = False
    se: bool = False


SPECS: dict[str, ResNetSpec] = {
    "resnet18": ResNetSpec(bottleneck=False, layers=(2, 2, 2, 2), expansion=1),
    "resnet50": ResNetSpec(bottleneck=True, layers=(3, 4, 6, 3), expansion=4),
    "resneXt50": ResNetSpec(bottleneck=True, layers=(3, 4, 6, 3), expansion=2, resnext=True),
    "se_resnet50": ResNetSpec(bottleneck=True, layers=(3, 4, 6, 3), expansion=4, se=True),
    "se_resneXt50": ResNetSpec(bottleneck=True, layers=(3, 4, 6, 3), expansion=2, resnext=True, se=True),
    "se_resneXt101": ResNetSpec(bottleneck=True, layers=(3, 4, 23, 3), expansion=2, resnext=True, se=True),
}


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, 3, stride=stride, padding=1, bias=False, groups=groups)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, 1, stride=stride, bias=False)


class SE(nn.Module):
    """Squeeze-excite gate: returns per-channel weights in (0, 1), shape [N, C, 1, 1]."""

    def __init__(self, planes: int, r: int = 16):
        super().__init__()
        self.squeeze = nn.AdaptiveAvgPool2d(1)
        self.excite = nn.Sequential(
            nn.Linear(planes, planes // r), nn.ReLU(True), nn.Linear(planes // r, planes), nn.Sigmoid()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c = x.shape[:2]
        return self.excite(self.squeeze(x).view(n, c)).view(n, c, 1, 1)


class Block(nn.Module):
    """Residual block: `convs` branch, optional SE gate on it, optional `downsample` shortcut."""

    def __init__(
        self,
        spec: ResNetSpec,
        inplanes: int,
        planes: int,
        ngroups: int,
        stride: int = 1,
        cardinality: int = 1,
        downsample: nn.Module | None = None,
    ):
        super().__init__()
        out = planes * spec.expansion
        if spec.bottleneck:
            self.convs = nn.Sequential(
                conv1x1(inplanes, planes),
                nn.GroupNorm(ngroups, planes),
                nn.ReLU(True),
                conv3x3(planes, planes, stride, groups=cardinality),
                nn.GroupNorm(ngroups, planes),
                nn.ReLU(True),
                conv1x1(planes, out),
                nn.GroupNorm(ngroups, out),
            )
        else:
            self.convs = nn.Sequential(
                conv3x3(inplanes, planes, stride, groups=cardinality),
                nn.GroupNorm(ngroups, planes),
                nn.ReLU(True),
                conv3x3(planes, planes, groups=cardinality),
                nn.GroupNorm(ngroups, planes),
            )
        self.downsample = downsample
        self.se = SE(out) if spec.se else None
        self.relu = nn.ReLU(True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.convs(x)
        if self.se is not None:
            out = self.se(out) * out
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class GroupNormResNet(nn.Module):
    """7x7/2 stem, 3x3/2 max-pool, four stages; output stride 32, `final_channels` channels."""

    reduction = 32
    # The four stages, added by name in __init__ (habitat's layer1 .. layer4).
    layer1: nn.Sequential
    layer2: nn.Sequential
    layer3: nn.Sequential
    layer4: nn.Sequential

    def __init__(self, name: str, in_channels: int, base_planes: int = 32, ngroups: int | None = None):
        super().__init__()
        spec = SPECS[name]
        ngroups = base_planes // 2 if ngroups is None else ngroups
        self.conv1 = nn.Sequential(
            nn.Conv2d(in_channels, base_planes, 7, stride=2, padding=3, bias=False),
            nn.GroupNorm(ngroups, base_planes),
            nn.ReLU(True),
        )
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        cardinality = base_planes // 2 if spec.resnext else 1
        planes = base_planes * (2 if spec.resnext else 1)
        inplanes = base_planes
        for i, blocks in enumerate(spec.layers):
            stage_planes, stride = planes * 2**i, 1 if i == 0 else 2
            out = stage_planes * spec.expansion
            downsample = None
            if stride != 1 or inplanes != out:
                downsample = nn.Sequential(conv1x1(inplanes, out, stride), nn.GroupNorm(ngroups, out))
            stage = [Block(spec, inplanes, stage_planes, ngroups, stride, cardinality, downsample)]
            stage += [Block(spec, out, stage_planes, ngroups) for _ in range(1, blocks)]
            self.add_module(f"layer{i + 1}", nn.Sequential(*stage))
            inplanes = out
        self.final_channels = inplanes

    @staticmethod
    def output_size(size: tuple[int, int]) -> tuple[int, int]:
        # Every stride-2 layer pads so that it rounds up: ceil(x / 32) overall, as habitat computes it.
        return (-(-size[0] // 32), -(-size[1] // 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.conv1(x))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))
