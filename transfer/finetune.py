"""One transfer run: a setting built from a PointGoal model, trained for Flee or Explore by the DD-PPO
trainer (one process, or many under torchrun), with its checkpoints, resume, logs and exported model.

The base model is loaded once (load_base) and handed on: the setting's policy is built from it here and the
trainer gets that module.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import torch

from navzoo.errors import ConfigError
from navzoo.models import ActorCritic, PointNavPolicy
from navzoo.train import checkpoint as ckpt
from navzoo.train.callbacks import TrainResult
from navzoo.train.config import TrainConfig
from navzoo.train.distributed import restart_count
from navzoo.train.run_folder import CONFIG_FILE
from navzoo.train.trainer import PolicySpec, train
from navzoo.transfer.config import TRANSFER_FILE, TransferConfig
from navzoo.transfer.settings import build_setting, check_base
from navzoo.zoo.loader import load

SOURCE = "navzoo finetune"


def load_base(reference: str, setting: str | None = None) -> PointNavPolicy:
    """The PointGoal model a transfer starts from: zoo name, model folder, run folder or hf-hub:org/name."""
    return check_base(load(reference), reference, setting)


def policy_spec(transfer: TransferConfig, base: PointNavPolicy, seed: int) -> PolicySpec:
    """The setting's policy built from `base` after torch.manual_seed(seed), with what the trained model
    records. Every worker builds it with the run's seed, as the trainer seeds a policy of its own, so all of
    them (and a sweep's first point) start from the same parameters."""
    torch.manual_seed(seed)
    policy, found = build_setting(transfer.setting, base, task=transfer.task, **transfer.build_kwargs())
    record = provenance(transfer)
    record["transfer"].update(found)  # e.g. where the ImageNet weights came from
    return PolicySpec(policy, SOURCE, provenance=record, files={TRANSFER_FILE: transfer.file_text()})


def provenance(transfer: TransferConfig) -> dict:
    """What the exported model records about its origin; `base_model` is what its Hub card names."""
    record = {"base_model": transfer.base, "transfer": transfer.to_dict()}
    if transfer.setting != "imagenet-encoder":
        record["transfer"].pop("imagenet_model")
        record["transfer"].pop("imagenet_weights")
    return record


def finetune(
    transfer: TransferConfig,
    config: TrainConfig,
    run_dir: str | Path,
    resume: bool = False,
    overwrite: bool = False,
    base: PointNavPolicy | None = None,
) -> TrainResult:
    """Train the setting in `run_dir`: transfer.yaml and train_config.yaml, then the trainer's files.
    `run_dir` must be new or empty unless `overwrite` (or `resume`) is set, as for `navzoo train`.
    `base` is the model transfer.base names, where the caller has loaded it already."""
    run_dir = Path(run_dir)
    if config.sim.task != transfer.task:
        raise ConfigError("sim.task", config.sim.task, f"{transfer.task!r}, the task of the transfer")
    # torchrun restarts workers with the original command, so a restart resumes as `navzoo train` does.
    resume = resume or restart_count() > 0
    base = base if base is not None else load_base(transfer.base, transfer.setting)
    spec = policy_spec(transfer, base, config.seed)
    return train(config, run_dir, resume=resume, spec=spec, overwrite=overwrite)


def load_run(run_dir: str | Path, overrides: Sequence[str] = ()) -> tuple[TransferConfig, TrainConfig]:
    """The configs a `navzoo finetune` run folder was started with (to resume it or evaluate it), with
    `key=value` overrides applied before the training config is checked: a run trained on CUDA resumes
    on a machine without it given sim.device=cpu."""
    from navzoo.train.config import load_config

    run_dir = Path(run_dir)
    transfer = TransferConfig.load(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise ConfigError("run_dir", str(run_dir), f"a `navzoo finetune` run folder holding {CONFIG_FILE}")
    return transfer, load_config(run_dir / CONFIG_FILE, overrides)


def checkpoint_policy(start: ActorCritic, path: Path) -> tuple[ActorCritic, int]:
    """The policy saved in one training checkpoint of a transfer run (eval mode), and its frames. `start` is
    the run's policy as built for it (policy_spec): a copy of it gets the checkpoint's weights."""
    policy = copy.deepcopy(start)
    state = ckpt.load_checkpoint(path)
    policy.load_state_dict(state["model"])
    return policy.eval(), int(state["counters"]["frames"])


def trainable_parameters(policy: torch.nn.Module) -> int:
    return sum(p.numel() for p in policy.parameters() if p.requires_grad)
