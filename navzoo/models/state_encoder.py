"""Recurrent state encoder (habitat's LSTMStateEncoder / GRUStateEncoder) with episode-boundary masking.

The recurrent state of one environment is a [R, H] tensor; for an LSTM with L layers R = 2L, packed as
[h_0..h_{L-1}; c_0..c_{L-1}] exactly as habitat concatenates (h, c). Batches are batch-first,
[N, R, H], like habitat-baselines' rollout storage.
"""

from __future__ import annotations

import torch
from torch import nn


class RNNStateEncoder(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int, rnn_type: str = "LSTM"):
        super().__init__()
        self.is_lstm = rnn_type == "LSTM"
        self.rnn = (nn.LSTM if self.is_lstm else nn.GRU)(input_size, hidden_size, num_layers)
        self.num_recurrent_layers = num_layers * (2 if self.is_lstm else 1)
        for name, param in self.rnn.named_parameters():
            if "weight" in name:
                nn.init.orthogonal_(param)
            else:
                nn.init.zeros_(param)

    def forward(
        self, x: torch.Tensor, hidden: torch.Tensor, masks: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x [T, N, D], hidden [N, R, H] before step 0, masks [T, N] (False = episode starts at t).

        Returns outputs [T, N, H] and the state after step T-1, [N, R, H].
        """
        steps = x.shape[0]
        state = hidden.transpose(0, 1)
        # Steps between episode starts (in any environment) go through the RNN in one call; the state
        # is zeroed where an episode starts, which gives the same result as stepping one at a time.
        starts = [0]
        if steps > 1:
            starts += ((~masks[1:]).any(dim=1).nonzero().squeeze(-1) + 1).tolist()
        outputs = []
        for begin, end in zip(starts, [*starts[1:], steps], strict=True):
            state = torch.where(masks[begin].view(1, -1, 1), state, state.new_zeros(()))
            out, state = self._run(x[begin:end], state)
            outputs.append(out)
        return torch.cat(outputs), state.transpose(0, 1).contiguous()

    def _run(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_lstm:
            return self.rnn(x, state.contiguous())
        h, c = state.chunk(2, dim=0)
        out, (h, c) = self.rnn(x, (h.contiguous(), c.contiguous()))
        return out, torch.cat([h, c], dim=0)
