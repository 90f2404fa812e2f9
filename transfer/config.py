"""What a transfer run is: the setting and its base model (TransferConfig, transfer.yaml in the run folder),
and the DD-PPO training config it runs under (train_config.yaml, as for `navzoo train`).

The training config starts from the one that trained the base model from scratch (DD-PPO section 6 and
appendix F: the transfer runs use the PointGoal experiments' PPO hyper-parameters; a base fine-tuned from
another model by a later run, e.g. kickstarted, keeps the first run's, not that run's warm-ups and small
learning rate), or from the DD-PPO defaults with the base model's cameras when the base was not trained by
navzoo (a converted habitat checkpoint). The task becomes Flee or
Explore, and `key=value` overrides apply last; a run with fewer environments than the base run's
mini-batches keeps one environment per mini-batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from navzoo.config_base import Config
from navzoo.errors import ConfigError
from navzoo.models import PointNavPolicy
from navzoo.models.metadata import training_records
from navzoo.train.config import TrainConfig
from navzoo.train.overrides import apply_override
from navzoo.transfer.settings import SETTINGS
from navzoo.typed_config import check_field_types

TRANSFER_FILE = "transfer.yaml"
TASKS = ("flee", "explore")


@dataclass(frozen=True)
class TransferConfig(Config):
    task: str  # "flee" or "explore"
    # One of the five settings: scratch, imagenet-encoder, pointgoal-encoder, pointgoal-finetune or
    # neural-controller.
    setting: str
    base: str  # the PointGoal model: a zoo name, a model folder, a `navzoo train` run or hf-hub:org/name
    dummy_goal: tuple[float, float] = (5.0, 0.0)  # (rho, phi) fed in place of GPS+Compass when fine-tuning
    imagenet_model: str = "resnet18"  # timm model of the ImageNet-encoder setting
    imagenet_weights: str | None = None  # a local file with its weights, instead of the Hub
    planner_hidden_size: int = 512  # hidden size of the neural controller's planner LSTM
    planner_layers: int = 2  # layers of the neural controller's planner LSTM

    def __post_init__(self):
        check_field_types(self)
        # A folder is kept as an absolute path: a resume may start elsewhere, and a Hub card must not
        # mistake "runs/rgb" for the repository "runs/rgb".
        if Path(self.base).is_dir():
            object.__setattr__(self, "base", str(Path(self.base).resolve()))
        if self.task not in TASKS:
            raise ConfigError("task", self.task, TASKS)
        if self.setting not in SETTINGS:
            raise ConfigError("setting", self.setting, tuple(SETTINGS))

    def build_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of build_setting."""
        skip = ("task", "setting", "base")
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}

    def file_text(self) -> str:
        """The text of transfer.yaml."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def load(cls, run_dir: Path) -> TransferConfig:
        path = run_dir / TRANSFER_FILE
        if not path.is_file():
            raise ConfigError(
                "run_dir", str(run_dir), f"a `navzoo finetune` run folder holding {TRANSFER_FILE} to resume"
            )
        try:
            return cls.from_dict(yaml.safe_load(path.read_text()))
        except ConfigError as err:  # a resume reads the file long after it was written: name it
            raise ConfigError(f"{path}: {err.field}", err.value, err.allowed) from None


def transfer_train_config(
    base: PointNavPolicy, task: str, frames: int | None, overrides: Sequence[str] = ()
) -> TrainConfig:
    """The DD-PPO config of a transfer run from `base` (see the module docstring)."""
    provenance = base.provenance or {}
    data = None
    if provenance.get("source") == "navzoo train":  # the run that trained from scratch, as far as recorded
        configs = [
            record["train_config"] for record in training_records(provenance) if record.get("train_config")
        ]
        data = configs[-1] if configs else None
    data = dict(data) if isinstance(data, dict) else {}
    sim = dict(data.get("sim") or {})
    if not sim:  # not trained by navzoo: DD-PPO defaults, with the base model's cameras
        resolution = base.config.resolution
        if resolution is None:  # a blind base (PolicyConfig gives every policy with a camera a resolution)
            raise ConfigError(
                "base",
                base.name,
                "a PointGoal policy with a camera (the blind base has none), e.g. navzoo-pointnav-depth",
            )
        sim = {"sensors": list(base.config.visual_sensors), "resolution": list(resolution)}
    sim.update(task=task, split="train")
    # Transfer trains by DD-PPO, also from a base that learnt by imitation (its teacher walks to a goal),
    # and starts from the base given, not from whatever the base itself was initialised from.
    data.update(
        sim=sim, model=None, init_from=None, policy={}, rank_sim_overrides={}, algorithm="ppo", stages=()
    )
    if frames is not None:
        data["total_frames"] = frames
    for item in overrides:
        apply_override(data, item)
    if data.get("model") is not None:
        raise ConfigError("model", data["model"], "unset: the setting and --from decide the policy")
    if not any(item.partition("=")[0] == "ppo.num_mini_batch" for item in overrides):
        _fit_mini_batches(data)
    return TrainConfig.from_dict(data)


def _fit_mini_batches(data: dict[str, Any]) -> None:
    """Mini-batches split a worker's environments, so the base run's count (8 for the shipped agents, made
    for 64 environments) cannot exceed the environments a smaller transfer run steps (`--num-envs 4`): the
    run then keeps one environment per mini-batch. (A count the overrides set is left to the usual check.)"""
    ppo, num_envs = data.get("ppo") or {}, (data.get("sim") or {}).get("num_envs")
    if num_envs and ppo.get("num_mini_batch", 0) > num_envs:
        data["ppo"] = {**ppo, "num_mini_batch": num_envs}
