"""Section `sb3`: navzoo's trainer against sb3-contrib's RecurrentPPO with the same simulator, network,
environments and rollout length."""

from __future__ import annotations

import importlib.util
import json

from train_bench.processes import child
from train_bench.runner import Runner
from train_bench.sizes import sizing, threads_per_worker
from train_bench.tables import TIME_SPLIT, fps, print_notes, print_table, size
from train_bench.targets import TARGETS, verdict


def section_sb3(runner: Runner, args) -> dict:
    from navzoo.models import PointNavPolicy
    from navzoo.train.config import load_config

    if importlib.util.find_spec("sb3_contrib") is None:
        hint = "sb3-contrib is not installed: pip install -e '.[bench]' (or pip install sb3-contrib)"
        print(f"\n### sb3 ({runner.device})\n\nskipped: {hint}")
        return {"skipped": hint}
    preset = args.sb3_preset
    overrides, warmup, updates, note = sizing(preset, runner.device, args)
    config = load_config(preset, [*overrides, *args.set])
    if "rgb" in config.sim.sensors:
        raise SystemExit("--sb3-preset: a depth or blind preset (sb3 would transpose and rescale RGB images)")
    print(f"[{runner.device}] sb3: navzoo trainer, {preset} ...", flush=True)
    navzoo_row = {**runner.train(preset, overrides, 1, warmup, updates), "trainer": "navzoo"}
    navzoo_row["train_padding"] = 1.0  # navzoo's mini-batches are whole [T, N] rollouts, never padded
    navzoo_row["params"] = sum(p.numel() for p in PointNavPolicy(config.policy_config()).parameters())
    print(f"[{runner.device}] sb3: RecurrentPPO ({args.sb3_env} env), {preset} ...", flush=True)
    spec = {
        "preset": preset,
        "overrides": [*overrides, *args.set],
        "device": runner.device,
        "threads": threads_per_worker(1),
        "warmup": warmup,
        "updates": updates,
        "env": args.sb3_env,
    }
    sb3_row = child(["--child-sb3", json.dumps(spec)], args.timeout)
    sb3_row.update(
        {
            "trainer": f"sb3-contrib RecurrentPPO ({args.sb3_env})",
            "num_envs": config.sim.num_envs,
            "num_steps": config.ppo.num_steps,
            "resolution": list(config.sim.resolution),
            "sensors": list(config.sim.sensors),
            "threads_per_worker": spec["threads"],
            "warmup_updates": warmup,
        }
    )
    rows = [navzoo_row, sb3_row]
    ratio = None
    if "error" not in navzoo_row and "error" not in sb3_row:
        ratio = navzoo_row["fps"] / sb3_row["fps"]
    print_table(
        f"sb3 ({runner.device}, {preset}, 1 process, {spec['threads']} threads)",
        [
            ("trainer", lambda r: r["trainer"]),
            ("size", size),
            ("params (M)", lambda r: f"{r['params'] / 1e6:.2f}"),
            ("updates", lambda r: f"{r['warmup_updates']}+{r['updates']}"),
            ("frames/s", fps()),
            ("frames/s (total)", fps("fps_total")),
            *TIME_SPLIT,
            ("update s", lambda r: r["update_s"]),
            ("episodes/update", lambda r: f"{r['episodes_per_update']:.0f}"),
            ("PPO frames/frame", lambda r: f"{r['train_padding']:.2f}"),
        ],
        rows,
    )
    notes = [
        "same simulator config, environments, rollout length, PPO epochs and mini-batches; RecurrentPPO's "
        "features extractor is navzoo's visual encoder + visual_fc + goal embedding, then a shared LSTM "
        "of the same size and linear heads (navzoo also embeds the previous action: 32 more LSTM inputs)",
        "PPO frames/frame: frames the encoder runs with gradients per collected frame and epoch. "
        "RecurrentPPO splits every rollout at episode starts and pads the fragments to the longest in the "
        "mini-batch; an untrained policy ends episodes every few steps (stop is 1 of 4 actions), so this "
        "measures early training, where padding is largest; with long episodes it approaches 1",
        "RecurrentPPO: Adam, no mixed precision; sim = time inside the vector env's step (the Gymnasium "
        "adapter's numpy conversion and final observations included), inference = rest of the rollout",
        f"sb3 env: {args.sb3_env} ("
        + (
            "NavVectorEnv, one batched simulator, behind a thin sb3 VecEnv bridge"
            if args.sb3_env == "vector"
            else "sb3 DummyVecEnv of single NavEnv environments"
        )
        + ")",
    ]
    if sb3_row.get("sb3_versions"):
        notes.append("versions: " + ", ".join(f"{k} {v}" for k, v in sb3_row["sb3_versions"].items()))
    if note:
        notes.append(note)
    print_notes(notes)
    result = {"rows": rows, "notes": notes, "ratio": ratio}
    if ratio is not None:
        check = verdict(ratio, TARGETS["sb3_ratio"], True, args.quick)
        print(
            f"\ntarget: navzoo >= {TARGETS['sb3_ratio']:g}x RecurrentPPO's frames/s: {ratio:.2f}x -> {check}"
        )
        result["target_sb3_ratio"] = {"value": ratio, "min": TARGETS["sb3_ratio"], "verdict": check}
    return result
