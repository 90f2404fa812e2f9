"""habitat's RunningMeanAndVar: per-channel input standardisation learned from the training stream.

DD-PPO's networks have no BatchNorm, so RGB inputs are standardised with running statistics instead.
Buffers `_mean`, `_var`, `_count` keep habitat's names; statistics are merged across workers with an
all-reduce when torch.distributed is initialised, as in habitat-baselines.
"""

from __future__ import annotations

import torch
from torch import distributed as dist
from torch import nn


class RunningMeanAndVar(nn.Module):
    _mean: torch.Tensor  # buffers, registered in __init__
    _var: torch.Tensor
    _count: torch.Tensor

    def __init__(self, n_channels: int):
        super().__init__()
        self.register_buffer("_mean", torch.zeros(1, n_channels, 1, 1))
        self.register_buffer("_var", torch.zeros(1, n_channels, 1, 1))
        self.register_buffer("_count", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self._update(x)
        inv_std = torch.rsqrt(torch.clamp(self._var, min=1e-2))
        return torch.addcmul(-self._mean * inv_std, x, inv_std)

    @torch.no_grad()
    def _update(self, x: torch.Tensor) -> None:
        channels_first = x.transpose(1, 0).reshape(x.size(1), -1)
        new_mean = channels_first.mean(-1, keepdim=True)
        new_count = torch.full_like(self._count, x.size(0))
        distributed = dist.is_available() and dist.is_initialized()
        if distributed:
            dist.all_reduce(new_mean)
            dist.all_reduce(new_count)
            new_mean /= dist.get_world_size()
        new_var = (channels_first - new_mean).pow(2).mean(-1, keepdim=True)
        if distributed:
            dist.all_reduce(new_var)
            new_var /= dist.get_world_size()
        new_mean, new_var = new_mean.view(1, -1, 1, 1), new_var.view(1, -1, 1, 1)
        # Chan et al.'s parallel merge of (mean, var, count) pairs.
        total = self._count + new_count
        m2 = self._var * self._count + new_var * new_count
        m2 += (new_mean - self._mean).pow(2) * self._count * new_count / total
        self._var.copy_(m2 / total)
        self._mean.copy_((self._count * self._mean + new_count * new_mean) / total)
        self._count += new_count
