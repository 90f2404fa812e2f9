"""The throughput targets the sections check, and their verdicts."""

from __future__ import annotations

import math

TARGETS = {"sb3_ratio": 3.0, "sim_fraction": 0.15, "hetero_ratio": 0.9}
SIM_TARGET_PRESET = "pointnav-depth-se-resnet9"  # the target's "64x64 depth with SE-ResNet9"


def verdict(value: float | None, target: float, higher_is_better: bool, quick: bool) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    ok = value >= target if higher_is_better else value <= target
    return ("PASS" if ok else "FAIL") + (" (quick run: not representative)" if quick else "")
