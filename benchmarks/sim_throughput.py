"""Simulator throughput: frames per second of BatchSim.step with random movement actions, next to ViZDoom.

    python benchmarks/sim_throughput.py              # CPU: numba and torch kernels, 1 and 2 threads
    python benchmarks/sim_throughput.py --envs 256 1024 --threads 2 --renderer numba
    python benchmarks/sim_throughput.py --device cuda --renderer torch --compile on

Each configuration runs in its own process, so its peak memory and its thread count are its own. BatchSim
steps all environments with random forward / left / right actions (no stop, so episodes run to their step
limit); a reset is timed per environment. `first call s` is the time of the first reset and step, which
compile the kernels or load them from the on-disk caches (numba's, and inductor's for torch.compile, which
still traces the kernels in every process). The cold-start table measures the same first call once more for
each kernel technology in the run (numba; torch.compile with `--compile on`) in a process whose caches are
empty, as after a fresh install: the one-off compile cost.

ViZDoom (`pip install -e '.[bench]'` adds it) runs in the same session as the reference: one process, the
my_way_home navigation map, 160x120 greyscale with its depth buffer, random actions. The last table gives
navzoo's depth 64x64 rate at 256 environments against it. JSON goes to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import tempfile
import time

import torch
from report import machine_info, markdown_table, run_in_child, write_json

# Sensors joined by "+" render together; the seen_map sensor (CPU only) maps each step's depth image.
SENSOR_SETS = (("depth", 64), ("depth", 128), ("rgb", 64), ("depth+seen_map", 64))
VIZDOOM_SCENARIO = "my_way_home.cfg"
# Where numba and torch.compile (inductor, and Triton on CUDA) keep compiled kernels between processes.
COMPILE_CACHES = ("NUMBA_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def measure(spec: dict) -> dict:
    """One configuration of BatchSim (runs in a child process)."""
    import numba

    from navzoo.sim import BatchSim, SimConfig

    threads, device, n = spec["threads"], spec["device"], spec["envs"]
    torch.set_num_threads(threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    torch.set_grad_enabled(False)
    config = SimConfig(
        num_envs=n,
        sensors=tuple(spec["sensor"].split("+")),
        resolution=(spec["resolution"],) * 2,
        device=device,
        renderer=spec["renderer"],
        compile=spec["compile"],
        seed=0,
    )
    sim = BatchSim(config)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    generator = torch.Generator(device=device).manual_seed(0)

    def random_moves():
        return torch.randint(1, 4, (n,), device=device, generator=generator)

    started = time.perf_counter()
    sim.reset()  # the first render and move: compile the kernels (or load them from the caches)
    sim.step(random_moves())
    sync()
    first_call = time.perf_counter() - started
    for _ in range(2):
        sim.step(random_moves())
    sync()
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < spec["seconds"] or steps < 3:
        sim.step(random_moves())
        steps += 1
    sync()
    elapsed = time.perf_counter() - started
    resets, started = 0, time.perf_counter()
    while time.perf_counter() - started < spec["seconds"] / 4 or resets < 2:
        sim.reset()
        resets += 1
    sync()
    reset_ms = (time.perf_counter() - started) / resets / n * 1e3
    sim.close()
    return {
        **spec,
        "fps": n * steps / elapsed,
        "step_ms": elapsed / steps * 1e3,
        "reset_ms_per_env": reset_ms,
        "first_call_s": first_call,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "gpu_peak_mb": torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else None,
    }


def measure_vizdoom(seconds: float) -> dict:
    """ViZDoom's frames/s in one process (runs in a child process)."""
    import vizdoom

    game = vizdoom.DoomGame()
    game.load_config(os.path.join(vizdoom.scenarios_path, VIZDOOM_SCENARIO))
    game.set_window_visible(False)
    game.set_screen_resolution(vizdoom.ScreenResolution.RES_160X120)
    game.set_screen_format(vizdoom.ScreenFormat.GRAY8)
    game.set_depth_buffer_enabled(True)
    game.set_mode(vizdoom.Mode.PLAYER)
    game.init()
    buttons = len(game.get_available_buttons())
    rng = random.Random(0)
    actions = [[rng.random() < 0.5 for _ in range(buttons)] for _ in range(32)]
    frames, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        if game.is_episode_finished():
            game.new_episode()
        game.make_action(rng.choice(actions))
        game.get_state()  # the frame and its depth buffer, as an agent would read them
        frames += 1
    elapsed = time.perf_counter() - started
    game.close()
    return {"scenario": VIZDOOM_SCENARIO, "resolution": "160x120", "fps": frames / elapsed}


def _child(spec: dict) -> dict | None:
    # A scratch working directory: ViZDoom writes its _vizdoom.ini settings file into the current one.
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ)
        if spec.get("cold"):  # empty compile caches in the scratch folder, gone with it
            env.update({name: os.path.join(scratch, name.lower()) for name in COMPILE_CACHES})
        return run_in_child(__file__, spec, cwd=scratch, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--envs", type=int, nargs="*", default=[1, 16, 256, 1024])
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2], help="torch and numba threads")
    parser.add_argument(
        "--renderer", nargs="*", default=None, help="numba and/or torch (default: both on CPU)"
    )
    parser.add_argument(
        "--compile", choices=("off", "on"), default="off", help="torch.compile the torch kernels"
    )
    parser.add_argument("--seconds", type=float, default=4.0, help="stepping time per configuration")
    parser.add_argument("--no-vizdoom", action="store_true", help="skip the ViZDoom reference")
    parser.add_argument(
        "--no-cold-start", action="store_true", help="skip the first calls with empty compile caches"
    )
    parser.add_argument("--out", default=None, help="JSON output path")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # child process: one measurement, printed as JSON
        spec = json.loads(args.one)
        print(json.dumps(measure_vizdoom(spec["seconds"]) if spec.get("vizdoom") else measure(spec)))
        return
    renderers = args.renderer or (["numba", "torch"] if args.device == "cpu" else ["torch"])
    rows = []
    for renderer in renderers:
        for threads in args.threads:
            for sensor, resolution in SENSOR_SETS:
                if "seen_map" in sensor and args.device != "cpu":
                    continue
                for envs in args.envs:
                    spec = {
                        "device": args.device,
                        "renderer": renderer,
                        "compile": args.compile == "on",
                        "threads": threads,
                        "envs": envs,
                        "sensor": sensor,
                        "resolution": resolution,
                        "seconds": args.seconds,
                    }
                    row = _child(spec)
                    if row is not None:
                        rows.append(row)
                        print(
                            f"  {renderer} {threads}t {envs:>5} {sensor} {resolution}: {row['fps']:,.0f} fps",
                            flush=True,
                        )
    cold = [] if args.no_cold_start else _cold_starts(args, renderers)
    vizdoom = None if args.no_vizdoom else _child({"vizdoom": True, "seconds": args.seconds})
    machine = machine_info(args.device)
    columns = [
        ("renderer", lambda r: r["renderer"] + (" + compile" if r["compile"] else "")),
        ("threads", "threads"),
        ("envs", "envs"),
        ("camera", lambda r: f"{r['sensor']} {r['resolution']}x{r['resolution']}"),
        ("frames/s", "fps"),
        ("reset ms/env", "reset_ms_per_env"),
        ("first call s", "first_call_s"),
        ("peak RSS MB", "peak_rss_mb"),
    ]
    print(f"\nBatchSim.step on {machine['cpu']} ({machine['cpu_count']} cores), torch {machine['torch']}\n")
    print(markdown_table(columns, rows))
    if cold:
        print("\nFirst call (reset and step) with empty compile caches, as after a fresh install:\n")
        print(markdown_table([*columns[:4], ("first call s", "first_call_s")], cold))
    comparison = _against_vizdoom(rows, vizdoom)
    if comparison:
        print("\nAgainst ViZDoom, measured in the same run:\n")
        print(
            markdown_table(
                [("simulator", "name"), ("frames/s", "fps"), ("ratio to ViZDoom", "ratio")], comparison
            )
        )
    results = {"rows": rows, "cold_start": cold, "vizdoom": vizdoom}
    path = write_json(f"sim_throughput-{args.device}", machine, results, args.out)
    print(f"\nwrote {path}")


def _cold_starts(args, renderers: list[str]) -> list[dict]:
    """The first call of each kernel technology that compiles (numba; the torch kernels with --compile on),
    at each thread count (numba compiles a serial and a parallel kernel), in a process with empty caches."""
    rows = []
    for renderer in renderers:
        if renderer == "torch" and args.compile == "off":
            continue  # eager tensor kernels compile nothing
        for threads in args.threads:
            spec = {
                "device": args.device,
                "renderer": renderer,
                "compile": args.compile == "on",
                "threads": threads,
                "envs": max(args.envs),  # enough rays for the compiled kernels (render.COMPILE_MIN_RAYS)
                "sensor": "depth",
                "resolution": 64,
                "seconds": 0,  # only the first call is reported
                "cold": True,
            }
            row = _child(spec)
            if row is not None:
                rows.append(row)
                print(
                    f"  cold start {renderer} {threads}t: first call {row['first_call_s']:.1f} s", flush=True
                )
    return rows


def _against_vizdoom(rows: list[dict], vizdoom: dict | None) -> list[dict]:
    """navzoo's depth 64x64 at 256 environments (each renderer and thread count) next to ViZDoom."""
    if vizdoom is None:
        return []
    chosen = [r for r in rows if r["envs"] == 256 and r["sensor"] == "depth" and r["resolution"] == 64]
    table = [
        {
            "name": f"navzoo, {r['renderer']}, {r['threads']} thread(s), 256 envs, depth 64x64",
            "fps": r["fps"],
            "ratio": r["fps"] / vizdoom["fps"],
        }
        for r in chosen
    ]
    return [
        *table,
        {"name": "ViZDoom, one process, 160x120 grey + depth", "fps": vizdoom["fps"], "ratio": 1.0},
    ]


if __name__ == "__main__":
    main()
