"""How large each measured run is: environments, warm-up and measured updates per preset and device."""

from __future__ import annotations

import os

CORES = os.cpu_count() or 1


def is_heavy(preset: str) -> bool:
    """The ResNet50 presets (256x256): an order of magnitude slower per frame than SE-ResNet9 at 64x64."""
    from navzoo.train.config import load_config

    sim = load_config(preset).sim
    return bool(sim.sensors) and max(sim.resolution) >= 128


def sizing(preset: str, device: str, args) -> tuple[list[str], int, int, str]:
    """Overrides, warm-up updates, measured updates and a note for one preset on one device."""
    heavy = is_heavy(preset)
    if args.quick:
        envs = 2 if heavy else args.envs or 8
        return [f"sim.num_envs={envs}", "ppo.num_steps=8"], 1, 2, "quick: tiny rollouts, not representative"
    if device == "cuda":
        envs = 16 if heavy else args.envs or 128
        overrides = [f"sim.num_envs={envs}", "sim.compile=true", "ppo.amp=true"]
        # torch.compile of the renderer happens during the first updates
        return overrides, max(args.warmup, 3), args.updates, "CUDA: compiled renderer, mixed precision"
    if heavy:
        # 256x256 ResNet50 trains at ~20 frames/s on a few cores (~30 s per 512-frame update): fewer updates
        return [], min(args.warmup, 1), min(args.updates, 3), "CPU: at most 1+3 updates"
    overrides = [f"sim.num_envs={args.envs}"] if args.envs else []
    return overrides, args.warmup, args.updates, ""


def threads_per_worker(workers: int) -> int:
    """Intra-op threads per worker: the machine's cores split between the workers (at least 1)."""
    return max(1, CORES // workers)
