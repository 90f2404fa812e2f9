"""Simulator throughput: frames per second of BatchSim.step with random movement actions.

Each configuration runs in its own process so that its peak memory is its own. Prints a table and writes
JSON (default benchmarks/results/sim_throughput-<device>.json).

    python benchmarks/sim_throughput.py                 # CPU, and CUDA too when a GPU is present
    python benchmarks/sim_throughput.py --device cpu --envs 1 16 256
"""

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

SENSOR_SETS = (("depth", 64), ("depth", 128), ("rgb", 64))


def measure(device: str, num_envs: int, sensor: str, resolution: int, seconds: float, compile: bool) -> dict:
    from navzoo.sim import BatchSim, SimConfig

    torch.set_grad_enabled(False)
    config = SimConfig(
        num_envs=num_envs,
        sensors=(sensor,),
        resolution=(resolution, resolution),
        device=device,
        compile=compile,
        seed=0,
    )
    started = time.perf_counter()
    sim = BatchSim(config)
    build = time.perf_counter() - started
    sim.reset()  # with compile=True this first render also compiles (reported as compile_s)
    compile_s = time.perf_counter() - started - build
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    generator = torch.Generator(device=device).manual_seed(0)

    def random_moves():
        return torch.randint(1, 4, (num_envs,), device=device, generator=generator)

    for _ in range(3):
        sim.step(random_moves())
    sync()
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds or steps < 3:
        sim.step(random_moves())
        steps += 1
    sync()
    elapsed = time.perf_counter() - started
    # time per reset: a whole batch reset (new episodes and first observations), divided by the batch size
    resets, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds / 4 or resets < 2:
        sim.reset()
        resets += 1
    sync()
    reset_ms = (time.perf_counter() - started) / resets / num_envs * 1e3
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gpu_mb = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else None
    sim.close()
    return {
        "device": device,
        "num_envs": num_envs,
        "sensor": sensor,
        "resolution": resolution,
        "fps": num_envs * steps / elapsed,
        "step_ms": elapsed / steps * 1e3,
        "reset_ms_per_env": reset_ms,
        "build_s": build,
        "compile": compile,
        "compile_s": compile_s if compile else None,
        "peak_rss_mb": peak_mb,
        "gpu_peak_mb": gpu_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", nargs="*", default=None, help="devices (default: cpu, plus cuda if present)"
    )
    parser.add_argument("--envs", type=int, nargs="*", default=[1, 16, 256, 1024])
    parser.add_argument("--seconds", type=float, default=4.0, help="stepping time per configuration")
    parser.add_argument(
        "--compile",
        choices=("off", "on", "both"),
        default="both",
        help="torch.compile the renderer (default: measure both)",
    )
    parser.add_argument("--out", default=None, help="JSON output path")
    parser.add_argument(
        "--one", nargs=5, metavar=("DEVICE", "N", "SENSOR", "RES", "COMPILE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.one:  # child process: measure one configuration and print it as JSON
        device, n, sensor, res, compiled = args.one
        print(json.dumps(measure(device, int(n), sensor, int(res), args.seconds, compiled == "on")))
        return
    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    modes = ("off", "on") if args.compile == "both" else (args.compile,)
    rows = []
    header = (
        f"{'device':<6} {'compile':<7} {'envs':>5} {'sensor':<12} {'frames/s':>10} {'step ms':>9}"
        f" {'reset ms/env':>12} {'peak RSS MB':>11} {'GPU MB':>8}"
    )
    print(header)
    print("-" * len(header))
    for device in devices:
        for mode in modes:
            for sensor, res in SENSOR_SETS:
                for n in args.envs:
                    cmd = [
                        sys.executable,
                        __file__,
                        "--one",
                        device,
                        str(n),
                        sensor,
                        str(res),
                        mode,
                        "--seconds",
                        str(args.seconds),
                    ]
                    row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                    rows.append(row)
                    gpu = f"{row['gpu_peak_mb']:.0f}" if row["gpu_peak_mb"] is not None else "-"
                    print(
                        f"{device:<6} {mode:<7} {n:>5} {sensor + f' {res}x{res}':<12} {row['fps']:>10.0f}"
                        f" {row['step_ms']:>9.2f} {row['reset_ms_per_env']:>12.3f}"
                        f" {row['peak_rss_mb']:>11.0f} {gpu:>8}",
                        flush=True,
                    )
    machine = {
        "cpu": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    out = Path(args.out or Path(__file__).parent / "results" / f"sim_throughput-{'-'.join(devices)}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "results": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
