"""habitat-baselines' SimpleCNN (rl/models/simple_cnn.py), the encoder of its PointNavBaselinePolicy.

Three convolutions without padding: 8x8 stride 4, 4x4 stride 2 and 3x3 stride 1, with 32, 64 and 32
channels and a ReLU after the first two. habitat follows them with Flatten, Linear(32*h*w, hidden) and
ReLU, which navzoo's policy holds as `net.visual_fc`. At 64x64 it costs a tenth of the half-width
SE-ResNet9's multiply-adds, so on a CPU the recurrent core, not the encoder, sets the frame rate.
"""

from __future__ import annotations

from torch import nn

LAYERS = ((32, 8, 4), (64, 4, 2), (32, 3, 1))  # (channels, kernel, stride)


class SimpleCNN(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        layers: list[nn.Module] = []
        for i, (channels, kernel, stride) in enumerate(LAYERS):
            layers.append(nn.Conv2d(in_channels, channels, kernel, stride))
            if i < len(LAYERS) - 1:
                layers.append(nn.ReLU(True))
            in_channels = channels
        self.cnn = nn.Sequential(*layers)
        self.final_channels = in_channels
        for layer in self.cnn:
            if isinstance(layer, nn.Conv2d):
                # habitat's layer_init passes the ReLU gain as kaiming_normal_'s `a`; kept for parity.
                nn.init.kaiming_normal_(layer.weight, nn.init.calculate_gain("relu"))
                assert layer.bias is not None  # Conv2d's default bias=True
                nn.init.zeros_(layer.bias)

    @staticmethod
    def output_size(size: tuple[int, int]) -> tuple[int, int]:
        h, w = size
        for _, kernel, stride in LAYERS:
            h, w = (h - kernel) // stride + 1, (w - kernel) // stride + 1
        return h, w

    def forward(self, x):
        return self.cnn(x)
