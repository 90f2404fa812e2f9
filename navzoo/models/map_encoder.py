"""The encoder of the seen_map sensor (navzoo.sim.map_sensor): a small CNN over the egocentric map of seen
walls and visited cells, whose embedding joins the recurrent core's input beside the camera's.

Three 3x3 convolutions of stride 2 (32, 64 and 64 channels, ReLU) halve the map three times, so a 32x32 map
of 0.5 m squares leaves 4x4 cells of 4 m; a Linear layer and a ReLU make the embedding. The map is a
memory the recurrent state would otherwise have to keep: where the walls met so far stand, and which
corridors it has already walked.
"""

from __future__ import annotations

import torch
from torch import nn

from navzoo.models.configuration import MAP_DOWNSCALE
from navzoo.names import SEEN_MAP_CHANNELS

# Channels of the 3x3 stride-2 convolutions: each halves the map, MAP_DOWNSCALE times in all.
LAYERS = (32, 64, 64)
EMBEDDING_SIZE = 256


class SeenMapEncoder(nn.Module):
    def __init__(self, map_size: int):
        super().__init__()
        layers: list[nn.Module] = []
        in_channels = SEEN_MAP_CHANNELS
        for channels in LAYERS:
            layers += [nn.Conv2d(in_channels, channels, 3, stride=2, padding=1), nn.ReLU(True)]
            in_channels = channels
        cells = (map_size // MAP_DOWNSCALE) ** 2
        self.net = nn.Sequential(
            *layers, nn.Flatten(), nn.Linear(in_channels * cells, EMBEDDING_SIZE), nn.ReLU(True)
        )

    def forward(self, seen_map: torch.Tensor) -> torch.Tensor:
        """[B, S, S, 2] maps (the sensor's layout) -> [B, EMBEDDING_SIZE]."""
        return self.net(seen_map.permute(0, 3, 1, 2))
