"""The encoder of the seen_map sensor (navzoo.sim.map_sensor): a small CNN over the egocentric map of seen
walls and visited cells, whose embedding joins the recurrent core's input beside the camera's.

Three 3x3 convolutions of stride 2 (32, 64 and 64 channels, ReLU) halve the map three times, so a 32x32 map
of 0.5 m squares leaves 4x4 cells of 4 m; a Linear layer and a ReLU make the embedding. The map is a
memory the recurrent state would otherwise have to keep: where the walls met so far stand, and which
corridors it has already walked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from navzoo.errors import NavzooError
from navzoo.models.configuration import MAP_DOWNSCALE
from navzoo.names import SEEN_MAP, SEEN_MAP_CHANNELS

if TYPE_CHECKING:
    from navzoo.models.policy import PointNavPolicy

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


def add_seen_map(source: nn.Module, policy: PointNavPolicy) -> dict[str, torch.Tensor]:
    """The state dict of `policy`, which reads the seen_map, from `source`, the same policy without it.

    Every tensor comes from `source` except the map encoder, which keeps `policy`'s initialisation, and the
    recurrent core's input weights, which gain zero columns where the map's embedding enters (Net2Net's
    function-preserving growth): the grown policy acts exactly as `source` did until training teaches it
    to read the map.
    """
    columns = policy.net.seen_map_columns
    if columns is None:
        raise NavzooError(
            f"add_seen_map: the policy does not read the {SEEN_MAP} sensor, so it has no map to add"
        )
    target = policy.state_dict()
    grown = dict(source.state_dict())
    inputs = "net.state_encoder.rnn.weight_ih_l0"  # only the first recurrent layer reads the inputs
    weight = grown[inputs]
    if weight.shape[1] + columns.stop - columns.start != target[inputs].shape[1]:
        raise NavzooError(
            f"add_seen_map: the source's recurrent core reads {weight.shape[1]} inputs, the policy's "
            f"{target[inputs].shape[1]}; the two must differ by the map's embedding alone"
        )
    grown[inputs] = torch.zeros_like(target[inputs])
    grown[inputs][:, : columns.start] = weight[:, : columns.start]
    grown[inputs][:, columns.stop :] = weight[:, columns.start :]
    encoder = {name: tensor for name, tensor in target.items() if name.startswith("net.map_encoder.")}
    if grown.keys() | encoder.keys() != target.keys():
        raise NavzooError(
            f"add_seen_map: the source differs from the policy in more than the map: "
            f"{sorted(grown.keys() ^ (target.keys() - encoder.keys()))}"
        )
    return grown | encoder
