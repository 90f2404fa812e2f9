"""Growing a trained PointGoal policy into one that also reads the seen_map sensor, acting the same."""

import torch
from torch import nn

from navzoo.errors import NavzooError
from navzoo.models.policy import PointNavPolicy
from navzoo.names import SEEN_MAP


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
