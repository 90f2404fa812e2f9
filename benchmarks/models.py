"""Speed of the zoo's architectures: parameters, MACs, inference and training frames/s.

    python benchmarks/models.py                       # CPU, and the GPU too when one is available
    python benchmarks/models.py --device cpu --models pointnav-resnet50 bps-se-resnet9 --batch-sizes 1 64
    python benchmarks/models.py --models pointnav-simple-cnn pointnav-simple-cnn:resolution=128 \
        bps-se-resnet9:base_planes=16 --precision fp32 bf16 --threads 1     # the encoder's cost

A model is a zoo name, optionally with PolicyConfig changes after a colon (`:resolution=128`,
`:base_planes=16,hidden_size=256`) to measure width and resolution. `--precision bf16` runs under
bfloat16 autocast (float16 on CUDA), as `ppo.amp` trains.

Each architecture runs at its usual resolution (256x256 for DD-PPO, 64x64 for BPS) on observations
rendered by the embedded simulator. Inference is one `policy.act` step for a batch of environments;
a training step is PPO's forward and backward through `evaluate_actions` on a [T, N] rollout slice plus
an Adam update. MACs count convolutions, linear layers and the recurrent cell per frame. Prints a table
and writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from pathlib import Path

import torch
from report import machine_info, markdown_table, write_json
from torch import nn

import navzoo
from navzoo.models import GOAL_SENSOR, PointNavPolicy
from navzoo.sim import BatchSim, SimConfig
from navzoo.train.overrides import apply_override

ARCHITECTURES = [
    "pointnav-resnet18",
    "pointnav-resnet50",
    "pointnav-resnext50",
    "pointnav-se-resnet50",
    "pointnav-se-resnext50",
    "pointnav-se-resnext101",
    "pointnav-se-resnext50-rgb",
    "pointnav-blind",
    "bps-se-resnet9",
    "pointnav-timm-resnet50-depth",
]


def rendered_observations(
    policy: PointNavPolicy, batch: tuple[int, ...], device: str
) -> dict[str, torch.Tensor]:
    """Simulator frames at the policy's resolution, tiled to `batch` (content does not change timing)."""
    config = policy.config
    sensors = config.visual_sensors
    sim_config = SimConfig(
        num_envs=4, sensors=sensors or ("depth",), resolution=config.resolution or (64, 64)
    )
    frames = BatchSim(sim_config).reset()
    keys = [*sensors, GOAL_SENSOR]
    count = math.prod(batch)
    index = torch.arange(count) % sim_config.num_envs
    return {k: frames[k][index].reshape(*batch, *frames[k].shape[1:]).to(device) for k in keys}


def count_macs(policy: PointNavPolicy, observations: dict[str, torch.Tensor]) -> float:
    """Multiply-accumulates per frame of one act step, from forward hooks on the heavy layers."""
    total = 0

    def hook(module: nn.Module, inputs: tuple, output) -> None:
        nonlocal total
        if isinstance(module, nn.Conv2d):
            total += output.numel() * module.in_channels // module.groups * math.prod(module.kernel_size)
        elif isinstance(module, nn.Linear):
            total += output.numel() * module.in_features
        elif isinstance(module, nn.LSTM | nn.GRU):
            gates = 4 if isinstance(module, nn.LSTM) else 3
            steps = inputs[0].shape[0] * inputs[0].shape[1]
            h = module.hidden_size
            total += steps * sum(
                gates * h * (module.input_size if i == 0 else h) + gates * h * h
                for i in range(module.num_layers)
            )

    handles = [
        m.register_forward_hook(hook)
        for m in policy.modules()
        if isinstance(m, nn.Conv2d | nn.Linear | nn.LSTM | nn.GRU)
    ]
    n = observations[GOAL_SENSOR].shape[0]
    with torch.inference_mode():
        policy.act(
            observations,
            policy.initial_state(n, observations[GOAL_SENSOR].device),
            _zeros(n, observations),
            _ones(n, observations),
        )
    for handle in handles:
        handle.remove()
    return total / n


def _zeros(n: int, like: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.long, device=like[GOAL_SENSOR].device)


def _ones(n: int, like: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.ones(n, dtype=torch.bool, device=like[GOAL_SENSOR].device)


def timed(step, device: str, min_time: float, max_iters: int) -> float:
    """Seconds per call of `step` after one warm-up call; repeats until `min_time` has passed."""
    step()
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    sync()
    iters, start = 0, time.perf_counter()
    while iters < max_iters and (iters == 0 or time.perf_counter() - start < min_time):
        step()
        sync()
        iters += 1
    return (time.perf_counter() - start) / iters


def autocast(device: str, precision: str):
    """The mixed precision ppo.amp trains with: bfloat16 on the CPU, float16 on CUDA; fp32: none."""
    if precision == "fp32":
        return contextlib.nullcontext()
    kind = "cuda" if device.startswith("cuda") else "cpu"
    return torch.autocast(kind, dtype=torch.float16 if kind == "cuda" else torch.bfloat16)


def inference_fps(policy: PointNavPolicy, batch: int, device: str, precision: str, args) -> float:
    obs = rendered_observations(policy, (batch,), device)
    hidden = policy.initial_state(batch, device)
    prev, masks = _zeros(batch, obs), _ones(batch, obs)

    def step():
        with torch.inference_mode(), autocast(device, precision):
            policy.act(obs, hidden, prev, masks)

    return batch / timed(step, device, args.min_time, args.max_iters)


def training_fps(policy: PointNavPolicy, device: str, precision: str, args) -> float:
    t, n = args.rollout
    obs = rendered_observations(policy, (t, n), device)
    hidden = policy.initial_state(n, device)
    prev = torch.randint(0, policy.config.num_actions, (t, n), device=device)
    actions = torch.randint(0, policy.config.num_actions, (t, n), device=device)
    masks = torch.rand(t, n, device=device) > 0.02  # a few episode starts inside the slice
    advantages, returns = torch.randn(t, n, device=device), torch.randn(t, n, device=device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=2.5e-4)

    def step():
        with autocast(device, precision):
            out = policy.evaluate_actions(obs, hidden, prev, masks, actions)
        loss = (
            -(out.log_prob * advantages).mean()
            + 0.5 * (out.value - returns).pow(2).mean()
            - 0.01 * out.entropy.mean()
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    policy.train()
    try:
        return t * n / timed(step, device, args.min_time, args.max_iters)
    finally:
        policy.eval()


def build(spec: str) -> PointNavPolicy:
    """A zoo architecture from "name" or "name:field=value,field=value" (PolicyConfig changes; a
    resolution of one number is square)."""
    name, _, changes = spec.partition(":")
    overrides = {}
    for change in filter(None, changes.split(",")):
        apply_override(overrides, change)  # values parsed as `navzoo train` parses its overrides
    if "resolution" in overrides:
        size = [int(v) for v in str(overrides["resolution"]).split("x")]
        overrides["resolution"] = (size[0], size[-1])
    return navzoo.create_model(name, **overrides)


def benchmark(spec: str, device: str, precision: str, args) -> dict:
    policy = build(spec).to(device).eval()
    config = policy.config
    row = {
        "model": spec,
        "device": device,
        "precision": precision,
        "backbone": config.backbone or "blind",
        "sensors": "+".join(config.visual_sensors) or "-",
        "resolution": "x".join(map(str, config.resolution)) if config.resolution else "-",
        "params_m": sum(p.numel() for p in policy.parameters()) / 1e6,
        "gmacs": count_macs(policy, rendered_observations(policy, (1,), device)) / 1e9,
    }
    for batch in args.batch_sizes:
        row[f"infer_fps_b{batch}"] = inference_fps(policy, batch, device, precision, args)
    row["train_fps"] = training_fps(policy, device, precision, args)
    return row


def table(rows: list[dict], args) -> str:
    def number(key: str, fmt: str):
        return key, lambda row: format(row[key], fmt)

    def speed(key: str):
        return key, lambda row: f"{row[key]:.1f}" if row[key] < 10 else f"{row[key]:,.0f}"

    columns = [(key, key) for key in ("model", "device", "precision", "backbone", "sensors", "resolution")]
    columns += [number("params_m", ".1f"), number("gmacs", ".3f")]
    columns += [speed(f"infer_fps_b{b}") for b in args.batch_sizes] + [speed("train_fps")]
    headers = {
        "params_m": "params (M)",
        "gmacs": "GMACs/frame",
        "train_fps": f"train fps ({args.rollout[0]}x{args.rollout[1]})",
    }
    headers |= {f"infer_fps_b{b}": f"infer fps b{b}" for b in args.batch_sizes}
    return markdown_table([(headers.get(key, key), get) for key, get in columns], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=ARCHITECTURES,
        help="zoo names, each optionally with PolicyConfig changes: NAME:field=value,... (default: one per "
        "architecture)",
    )
    parser.add_argument(
        "--precision",
        nargs="+",
        choices=("fp32", "bf16"),
        default=["fp32"],
        help="fp32, and/or bf16: bfloat16 autocast on the CPU, float16 on CUDA, as ppo.amp (default fp32)",
    )
    parser.add_argument(
        "--device", nargs="+", default=None, help="cpu, cuda (default: cpu, plus cuda if available)"
    )
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 256])
    parser.add_argument(
        "--rollout", nargs=2, type=int, default=[32, 8], metavar=("T", "N"), help="training slice"
    )
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds to repeat each measurement for")
    parser.add_argument("--max-iters", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    parser.add_argument("--json", type=Path, default=Path("runs/benchmarks/models.json"))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = args.device or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    for device in devices:
        for name in args.models:
            for precision in args.precision:
                start = time.perf_counter()
                rows.append(benchmark(name, device, precision, args))
                print(f"[{device} {precision}] {name}: {time.perf_counter() - start:.0f} s", flush=True)
    print(table(rows, args))
    machine = machine_info("cuda" if "cuda" in devices else "cpu")
    print(f"wrote {write_json('models', machine, rows, args.json)}")


if __name__ == "__main__":
    main()
