"""Section `presets`: every preset at a size the device can run, with the simulation-share target."""

from __future__ import annotations

from train_bench.runner import Runner
from train_bench.sizes import sizing, threads_per_worker
from train_bench.tables import TIME_SPLIT, fps, print_table, size
from train_bench.targets import SIM_TARGET_PRESET, TARGETS, verdict

PRESETS = (
    "pointnav-depth-se-resnet9",
    "pointnav-rgb-se-resnet9",
    "pointnav-blind",
    "pointnav-depth-resnet50",
    "pointnav-rgb-resnet50",
)


def section_presets(runner: Runner, args) -> dict:
    rows, notes = [], {}
    for preset in args.presets:
        overrides, warmup, updates, note = sizing(preset, runner.device, args)
        print(f"[{runner.device}] presets: {preset} ...", flush=True)
        row = runner.train(preset, overrides, 1, warmup, updates)
        row["note"] = note
        rows.append(row)
        if note:
            notes[preset] = note
    ok = [r for r in rows if "error" not in r]
    print_table(
        f"presets ({runner.device}, 1 worker, {threads_per_worker(1)} threads)",
        [
            ("preset", lambda r: r["preset"]),
            ("model", lambda r: r["model"]),
            ("size (envs x steps, sensors)", size),
            ("updates", lambda r: f"{r['warmup_updates']}+{r['updates']}"),
            ("frames/s", fps()),
            ("frames/s (total)", fps("fps_total")),
            *TIME_SPLIT,
            ("update s", lambda r: r["update_s"]),
            ("note", lambda r: ("FAILED (error in the JSON) " if "error" in r else "") + r["note"]),
        ],
        rows,
    )
    target = next((r for r in ok if r["preset"] == SIM_TARGET_PRESET and r["resolution"] == [64, 64]), None)
    sim_fraction = target["sim_fraction"] if target else None
    result = {"rows": rows, "notes": notes}
    if target is not None:
        check = verdict(sim_fraction, TARGETS["sim_fraction"], False, args.quick)
        print(
            f"\ntarget: simulation <= {TARGETS['sim_fraction']:.0%} of the frame time at 64x64 depth with "
            f"SE-ResNet9: {100 * sim_fraction:.1f}% -> {check}"
        )
        result["target_sim_fraction"] = {
            "value": sim_fraction,
            "max": TARGETS["sim_fraction"],
            "verdict": check,
        }
    return result
