"""The simulator-only frames/s of two SimConfigs, alternated in one process (the hetero section's probe)."""

from __future__ import annotations

import time

import torch


def measure(spec: dict) -> dict:
    """Best frames/s of the "base" and "costly" simulators of `spec`, each with random actions."""
    from navzoo.sim import BatchSim, SimConfig

    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    device = spec["device"]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    generator = torch.Generator(device=device).manual_seed(0)
    sims = {}
    for name in ("base", "costly"):
        sims[name] = sim = BatchSim(SimConfig.from_dict({**spec[name], "device": device}))
        sim.reset()
        for _ in range(3):  # warm-up (and compilation with sim.compile)
            sim.step(torch.randint(0, 4, (sim.num_envs,), device=device, generator=generator))
    best = dict.fromkeys(sims, 0.0)
    for _ in range(2):  # alternate, and keep each one's best
        for name, sim in sims.items():
            n = sim.num_envs
            steps, started = 0, time.perf_counter()
            while time.perf_counter() - started < spec["seconds"] / 2 or steps < 3:
                # uniform over all four actions, like an untrained policy: stop ends episodes often
                sim.step(torch.randint(0, 4, (n,), device=device, generator=generator))
                steps += 1
            sync()
            best[name] = max(best[name], n * steps / (time.perf_counter() - started))
    return {"base_fps": best["base"], "costly_fps": best["costly"]}
