"""What a training checkpoint holds of a run beyond the model (navzoo.train.checkpoint writes and reads the
files): each worker's simulator, recurrent carry, RNG and teacher states, and the checks that a checkpoint
fits the run that resumes from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from navzoo.sim.batch_sim import BatchSim
from navzoo.train import checkpoint as ckpt
from navzoo.train.config import TrainConfig
from navzoo.train.imitation import WEIGHTS_DIGEST, TeacherLabels
from navzoo.train.rollout import RolloutStorage

CHECKPOINT_FORMAT = "navzoo-train-checkpoint"
# The config keys a model's tensors depend on, named when a resume finds tensors of another shape.
ARCHITECTURE_KEYS = ("model", "policy.", "sim.sensors", "sim.resolution", "sim.task", "sim.seen_map_")


def worker_state(
    sim: BatchSim, storage: RolloutStorage, teacher: TeacherLabels | None, device: torch.device
) -> dict[str, Any]:
    """What one worker needs to go on exactly where it was: its simulator, carry, RNG and teacher states."""
    return {
        "sim": sim.state_dict(),
        "carry": storage.carry_state(),
        "rng": ckpt.rng_state(device),
        "teacher": teacher.state_dict() if teacher is not None else {},
    }


def restore_worker(
    state: dict[str, Any],
    sim: BatchSim,
    storage: RolloutStorage,
    teacher: TeacherLabels | None,
    device: torch.device,
    observe: Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]],
) -> None:
    """Put back one worker's state (worker_state); `observe` turns the simulator's observations into the
    rollout's."""
    sim.load_state_dict(state["sim"])
    to_device = {k: v.to(device) for k, v in state["carry"].items()}
    storage.load_carry_state(to_device, observe(sim.observe()))
    if teacher is not None:
        teacher.load_state_dict(state.get("teacher", {}))
    ckpt.set_rng_state(state["rng"], device)


def check_resumable(
    state: dict, path: Path, world_size: int, policy: torch.nn.Module, config: TrainConfig
) -> None:
    """CheckpointError unless the checkpoint at `path` is a training checkpoint of as many workers as this
    run has, with tensors that fit its policy."""
    if state.get("format") != CHECKPOINT_FORMAT:
        raise ckpt.CheckpointError(f"{path} is not a navzoo training checkpoint")
    if state["world_size"] != world_size:
        raise ckpt.CheckpointError(
            f"{path} was written by {state['world_size']} workers and this run has "
            f"{world_size}; resume with --nproc-per-node (and nodes) giving "
            f"{state['world_size']} workers, so every worker gets back its environments"
        )
    _check_architecture(state, path, policy, config)


def _check_architecture(state: dict, path: Path, policy: torch.nn.Module, config: TrainConfig) -> None:
    """CheckpointError naming the changed settings if the checkpoint's tensors do not fit the policy."""
    expected = policy.state_dict()
    saved = state["model"]
    if saved.keys() == expected.keys() and all(saved[k].shape == v.shape for k, v in expected.items()):
        return
    before, now = _flatten(state.get("config", {})), _flatten(config.to_dict())
    changed = [
        f"{key}: {before.get(key)!r} -> {now.get(key)!r}"
        for key in sorted(before.keys() | now.keys())
        if before.get(key) != now.get(key) and key.startswith(ARCHITECTURE_KEYS)
    ]
    raise ckpt.CheckpointError(
        f"{path} holds a model of another architecture than this run's config builds; changed since it "
        f"was written: {', '.join(changed) or 'the policy built by the caller'}. Resume with the run's "
        "own settings, or train the new architecture in a new run folder."
    )


def _flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    """{"policy": {"hidden_size": 256}} -> {"policy.hidden_size": 256}."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def check_same_teacher(saved: dict | None, now: dict | None, path: Path) -> None:
    """CheckpointError if the run at `path` distilled a policy teacher (`saved`: its name, provenance and
    weights' digest, TeacherLabels.policy_record) and imitation.teacher_model now loads another model
    (`now`): the name may have come to mean other weights, e.g. a zoo agent of another navzoo version, a
    relative folder read from another working directory, or a folder overwritten by a run of the same
    provenance."""
    if saved is not None and now is not None and WEIGHTS_DIGEST not in saved:
        # A checkpoint written before teachers were pinned by their weights is checked by provenance alone.
        now = {key: value for key, value in now.items() if key != WEIGHTS_DIGEST}
    if saved is None or saved == now:
        return

    def described(record: dict) -> str:
        digest = f", weights {record[WEIGHTS_DIGEST][:12]}" if WEIGHTS_DIGEST in record else ""
        return f"{record.get('model')} (run {record.get('run')!r}, {record.get('frames')} frames{digest})"

    loaded = described(now) if now is not None else "no policy teacher"
    raise ckpt.CheckpointError(
        f"{path} was trained with the teacher {described(saved)}, and this run's imitation.teacher_model "
        f"loads {loaded}; resume with the same teacher (its folder, or the navzoo version that shipped it), "
        "or start a new run"
    )
