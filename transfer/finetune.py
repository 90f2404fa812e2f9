"""One transfer run: a setting built from a PointGoal model, trained for Flee or Explore by the DD-PPO
trainer (one process, or many under torchrun), with its checkpoints, resume, logs and exported model."""

from __future__ import annotations

from pathlib import Path

import torch

from navzoo.errors import ConfigError
from navzoo.models import ActorCritic
from navzoo.train import checkpoint as ckpt
from navzoo.train.config import TrainConfig
from navzoo.train.distributed import restart_count
from navzoo.train.trainer import CONFIG_FILE, PolicySpec, TrainResult, train
from navzoo.transfer.config import TRANSFER_FILE, TransferConfig
from navzoo.transfer.settings import build_setting, check_base

SOURCE = "navzoo finetune"


def load_base(reference: str):
    """The PointGoal model a transfer starts from: zoo name, model folder, run folder or hf-hub:org/name."""
    from navzoo.zoo import load  # the zoo imports the hub; kept out of `import navzoo.transfer`

    return check_base(load(reference), reference)


def policy_spec(transfer: TransferConfig) -> PolicySpec:
    """How every worker builds the setting's policy (after the trainer's seed, so all start alike)."""
    record = provenance(transfer)

    def build() -> ActorCritic:
        policy, found = build_setting(transfer.setting, load_base(transfer.base), **transfer.build_kwargs())
        record["transfer"].update(found)  # e.g. where the ImageNet weights came from
        return policy

    return PolicySpec(build, SOURCE, provenance=record, files={TRANSFER_FILE: transfer.file_text()})


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
) -> TrainResult:
    """Train the setting in `run_dir`: transfer.yaml and train_config.yaml, then the trainer's files.
    `run_dir` must be new or empty unless `overwrite` (or `resume`) is set, as for `navzoo train`."""
    run_dir = Path(run_dir)
    if config.sim.task != transfer.task:
        raise ConfigError("sim.task", config.sim.task, f"{transfer.task!r}, the task of the transfer")
    # torchrun restarts workers with the original command, so a restart resumes as `navzoo train` does.
    resume = resume or restart_count() > 0
    return train(config, run_dir, resume=resume, spec=policy_spec(transfer), overwrite=overwrite)


def load_run(run_dir: str | Path) -> tuple[TransferConfig, TrainConfig]:
    """The configs a `navzoo finetune` run folder was started with (to resume it or evaluate it)."""
    from navzoo.train.config import load_config

    run_dir = Path(run_dir)
    transfer = TransferConfig.load(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise ConfigError("run_dir", str(run_dir), f"a `navzoo finetune` run folder holding {CONFIG_FILE}")
    return transfer, load_config(run_dir / CONFIG_FILE)


def checkpoint_policy(transfer: TransferConfig, path: Path) -> tuple[ActorCritic, int]:
    """The policy saved in one training checkpoint of a transfer run (eval mode), and its frames."""
    policy = policy_spec(transfer).build()
    state = ckpt.load_checkpoint(path)
    policy.load_state_dict(state["model"])
    policy.task = transfer.task
    return policy.eval(), int(state["counters"]["frames"])


def trainable_parameters(policy: torch.nn.Module) -> int:
    return sum(p.numel() for p in policy.parameters() if p.requires_grad)
