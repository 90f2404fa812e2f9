"""The training config (TrainConfig): a run's blocks and run-level fields, checked as a whole.

A config has these blocks and a few run-level fields:

    model: bps-se-resnet9        # zoo architecture the policy is built from
    policy: {hidden_size: 256}   # PolicyConfig fields that change it (sensors and resolution follow `sim`)
    sim: {...}                   # SimConfig fields for each worker's batch of environments
    algorithm: ppo               # ppo (DD-PPO), dagger or kickstart
    ppo: {...}                   # PPOConfig: the update, its optimiser and rollouts
    imitation: {...}             # ImitationConfig: the teacher of dagger and kickstart
    stages: [...]                # the run's later stages (StageConfig), each changing ppo, imitation
                                 # and the scene stream (sim, rank_sim_overrides)
    distributed: {...}           # DistributedConfig: preemption threshold, backend

The blocks are in navzoo.train.config_blocks and the stages in navzoo.train.stage_config. load_config reads
a preset or YAML file (navzoo.train.presets) and applies `key=value` overrides (navzoo.train.overrides).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from navzoo.config_base import Config, check_keys, one_of
from navzoo.errors import ConfigError
from navzoo.models.configuration import GOAL_SENSOR, PolicyConfig
from navzoo.names import SEEN_MAP
from navzoo.sim.config import SimConfig
from navzoo.tasks import get_task
from navzoo.train.config_blocks import (
    ALGORITHMS,
    CPU_TEACHERS,
    TEACHER_ALGORITHMS,
    TEACHER_SENSORS,
    DistributedConfig,
    ImitationConfig,
    PPOConfig,
    WandbConfig,
    positive_int,
)
from navzoo.train.overrides import apply_override
from navzoo.train.presets import read_config_file
from navzoo.train.rank_sims import overridden_ranks, rank_sim
from navzoo.train.stage_config import (
    StageConfig,
    StageSettings,
    check_stage_settings,
    check_stages,
    parse_stages,
)
from navzoo.train.teacher import policy_teacher_config
from navzoo.typed_config import check_field_types
from navzoo.zoo.loader import model_entry


@dataclass(frozen=True)
class TrainConfig(Config):
    # The zoo architecture to train; None when the caller builds the policy (navzoo finetune).
    model: str | None = "bps-se-resnet9"
    # Start from the weights of this model (a model or run folder, a zoo name or hf-hub:org/name) of the
    # same architecture instead of a fresh initialisation, e.g. an imitation run fine-tuned by DD-PPO.
    init_from: str | None = None
    # PolicyConfig fields that change the zoo architecture (e.g. hidden_size); its sensors and resolution
    # follow sim.
    policy: dict[str, Any] = field(default_factory=dict)
    # The simulator of each worker (SimConfig), on the train split.
    sim: SimConfig = field(default_factory=lambda: SimConfig(split="train"))
    # "ppo": DD-PPO; "dagger": imitation of a teacher (settings in `imitation`); "kickstart": DD-PPO with the
    # teacher's cross-entropy added to its loss (imitation.kickstart_weight).
    algorithm: str = "ppo"
    ppo: PPOConfig = field(default_factory=PPOConfig)  # PPO's hyperparameters
    imitation: ImitationConfig = field(default_factory=ImitationConfig)  # DAgger and kickstarting settings
    # The later stages of the run, in order (StageConfig): e.g. DD-PPO after imitation, or a curriculum of
    # scene streams. YAML may give one stage as a mapping (one with from_frames 0 is none); errors name a
    # stage by its index.
    stages: tuple[StageConfig, ...] = ()
    distributed: DistributedConfig = field(default_factory=DistributedConfig)  # multi-worker settings
    wandb: WandbConfig = field(default_factory=WandbConfig)  # Weights & Biases logging
    total_frames: int = 10_000_000  # frames of experience summed over all workers
    seed: int = 0  # seeds the policy's initialisation, the workers' scene streams and action sampling
    device: str = "auto"  # "auto": the worker's CUDA device when there is one, else CPU
    checkpoint_every: int = 50  # updates between checkpoints (one is always written at the end)
    keep_checkpoints: int = 3  # checkpoints kept in checkpoints/; older ones are deleted
    log_every: int = 1  # updates between log lines
    torch_threads: int = 0  # intra-op threads per worker; 0 splits the machine's cores between workers
    # Simulator fields that differ on some workers, e.g. {1: {scene_families: [office-l]}}.
    rank_sim_overrides: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self):
        check_field_types(self)

    def validate(self) -> None:
        self.ppo.validate()
        self.imitation.validate()
        self.distributed.validate()
        one_of("algorithm", self.algorithm, ALGORITHMS)
        if self.uses_teacher and not get_task(self.sim.task).has_goal:
            raise ConfigError(
                "algorithm",
                self.algorithm,
                f"'ppo' on {self.sim.task}: {self.algorithm}'s teacher walks to a goal, which it has not",
            )
        stages = self._validate_stages()
        planner = any(stage.uses_teacher and stage.imitation.teacher == "map-planner" for _, stage in stages)
        if self.sim.scenes_dir is not None and planner:
            raise ConfigError(
                "imitation.teacher",
                "map-planner",
                "'shortest-path' with sim.scenes_dir (the map-planner maps navzoo's own scene grids, not "
                "scanned meshes yet)",
            )
        if self.sim.split != "train":
            raise ConfigError("sim.split", self.sim.split, "'train' (evaluate other splits with navzoo eval)")
        if self.sim.num_envs < self.ppo.num_mini_batch:
            raise ConfigError(
                "ppo.num_mini_batch", self.ppo.num_mini_batch, f"at most sim.num_envs={self.sim.num_envs}"
            )
        positive_int("total_frames", self.total_frames)
        for name in ("checkpoint_every", "keep_checkpoints", "log_every"):
            positive_int(name, getattr(self, name))
        if self.torch_threads < 0:
            raise ConfigError("torch_threads", self.torch_threads, "0 (automatic) or a positive integer")
        one_of("device", self.device.split(":")[0], ("auto", "cpu", "cuda"))
        if self.device != "auto" and self.sim.device != "cpu" and self.sim.device != self.device:
            raise ConfigError(
                "sim.device", self.sim.device, f"{self.device!r} like device: it simulates where it trains"
            )
        if self.needs_cpu and not self.worker_device().startswith("cpu"):
            name, value, allowed = (
                ("device", self.device, "'cpu' or 'auto'")
                if self.device != "auto"
                else ("sim.device", self.sim.device, "'cpu'")
            )
            raise ConfigError(
                name,
                value,
                f"{allowed} with {self._cpu_reason()} (numba kernels on the CPU, and the simulator runs "
                "where the policy trains)",
            )
        for stage in range(len(self.stages) + 1):
            for rank in {0, *self.overridden_ranks()}:
                self.sim_for_rank(rank, stage)
        if self.model is not None:
            policy = self.policy_config()
            if self.ppo.aux_tasks and policy.is_blind:
                raise ConfigError(
                    "ppo.aux_tasks", self.ppo.aux_tasks, "[] for a blind policy (they read visual embeddings)"
                )
            for block, stage in stages:
                if stage.uses_teacher and stage.imitation.depth_weight > 0 and policy.is_blind:
                    raise ConfigError(
                        f"{block}imitation.depth_weight",
                        stage.imitation.depth_weight,
                        "0 for a blind policy (depth is predicted from the visual embedding)",
                    )

    def _validate_stages(self) -> list[tuple[str, StageSettings]]:
        """Each stage's blocks, the order of the stages, and what each algorithm allows; returns
        stage_settings()."""
        check_stages(self.algorithm, self.stages, self.sim)
        stages = self.stage_settings()
        check_stage_settings(stages)
        return stages

    def stage_settings(self) -> list[tuple[str, StageSettings]]:
        """Every stage of the run with the settings it trains with, and the prefix that names its keys:
        "" for the first stage, "stages.<index>." for a later one."""
        first = StageSettings(self.algorithm, self.ppo, self.imitation)
        later = [
            (
                f"stages.{i}.",
                StageSettings(
                    stage.algorithm,
                    stage.ppo_config(self.ppo, f"stages.{i}"),
                    stage.imitation_config(self.imitation, f"stages.{i}"),
                ),
            )
            for i, stage in enumerate(self.stages)
        ]
        return [("", first), *later]

    def sim_for_rank(self, rank: int, stage: int = 0) -> SimConfig:
        """Worker `rank`'s simulator in stage `stage` (0 the first, i the run's stages[i - 1]), with the
        cameras an imitation teacher reads that the policy does not (teacher_only_sensors); see
        navzoo.train.rank_sims."""
        sensors = (*self.sim.sensors, *self.teacher_only_sensors())
        return rank_sim(self.sim, self.stages, self.rank_sim_overrides, self.seed, rank, stage, sensors)

    def overridden_ranks(self) -> set[int]:
        """The workers that the run's or a stage's rank_sim_overrides name."""
        return overridden_ranks(self.rank_sim_overrides, self.stages)

    def policy_config(self) -> PolicyConfig:
        """The zoo architecture `model` with `policy` overrides; sensors and resolution follow `sim`."""
        if self.model is None:
            raise ConfigError(
                "model", None, "a zoo architecture (only navzoo finetune builds its own policy)"
            )
        base = model_entry(self.model).config
        sensors = tuple(self.sim.sensors) + ((GOAL_SENSOR,) if get_task(self.sim.task).has_goal else ())
        if base.is_blind:
            sensors = tuple(s for s in sensors if s == GOAL_SENSOR)
            changes: dict[str, Any] = {"sensors": sensors}
        else:
            # normalize_visual_inputs=None re-derives it for the sensors (RGB: habitat's running mean/var).
            changes = {
                "sensors": sensors,
                "resolution": tuple(self.sim.resolution),
                "normalize_visual_inputs": None,
            }
            if SEEN_MAP in sensors:
                changes.update(seen_map_size=self.sim.seen_map_size, seen_map_cell=self.sim.seen_map_cell)
        changes.update(self.policy)
        try:
            return base.replace(**changes)
        except ConfigError as err:
            raise ConfigError(f"policy.{err.field}", err.value, err.allowed) from None
        except TypeError:
            names = ", ".join(f.name for f in dataclasses.fields(PolicyConfig))
            raise ConfigError("policy", sorted(self.policy), f"PolicyConfig fields: {names}") from None

    def teacher_only_sensors(self) -> tuple[str, ...]:
        """Cameras the simulator renders for the imitation teacher alone (not stored, not seen by the
        policy): the map-planner's depth, a policy teacher's cameras, and the depth head's target
        (imitation.depth_weight), where the learner sees RGB."""
        if not self.uses_teacher:
            return ()
        wanted = TEACHER_SENSORS[self.imitation.teacher]
        if self.imitation.teacher_model is not None:
            wanted = tuple(policy_teacher_config(self.imitation.teacher_model).visual_sensors)
        if any(stage.uses_teacher and stage.imitation.depth_weight > 0 for _, stage in self.stage_settings()):
            wanted += ("depth",)
        return tuple(s for s in dict.fromkeys(wanted) if s not in self.sim.sensors)

    @property
    def uses_teacher(self) -> bool:
        """Whether a teacher labels the steps from the start of the run (only then may later stages have
        one)."""
        return self.algorithm in TEACHER_ALGORITHMS

    @property
    def needs_cpu(self) -> bool:
        """Whether the run trains on the CPU alone: its teacher plans there (CPU_TEACHERS), or its simulator
        maps what it sees (the seen_map sensor)."""
        return self._cpu_reason() is not None

    def _cpu_reason(self) -> str | None:
        if self.uses_teacher and self.imitation.teacher in CPU_TEACHERS:
            return f"imitation.teacher {self.imitation.teacher}"
        if SEEN_MAP in self.sim.sensors:
            return f"the {SEEN_MAP} sensor"
        return None

    def worker_device(self) -> str:
        """The device each worker trains and simulates on: `device`, or with "auto" a `sim.device` that
        asks for CUDA (the README's `sim.device=cuda`), the CPU for a run that needs it (needs_cpu), else
        the worker's CUDA device when there is one."""
        if self.device != "auto":
            return self.device
        if self.sim.device != "cpu":
            return self.sim.device
        return "cpu" if self.needs_cpu else "auto"

    def frames_per_update(self, world_size: int) -> int:
        return self.ppo.num_steps * self.sim.num_envs * world_size

    @classmethod
    def from_dict(cls, data: Any, block: str = "") -> TrainConfig:
        """The config of a training run, checked as a whole (see validate)."""
        check_keys(cls, data, block)
        if "sim" in data:
            data = {**data, "sim": _train_sim(data["sim"])}
        if "stages" in data:
            data = {**data, "stages": parse_stages(data["stages"])}
        config = super().from_dict(data, block)
        config.validate()
        return config


def load_config(source: str | Path, overrides: Sequence[str] = ()) -> TrainConfig:
    """A preset name or a YAML file (navzoo.train.presets), then `key=value` overrides applied in order."""
    data = read_config_file(source)
    for item in overrides:
        apply_override(data, item)
    return TrainConfig.from_dict(data)


def _train_sim(values: Any) -> SimConfig:
    """The `sim` block of a training config: on the train split unless it says otherwise."""
    check_keys(SimConfig, values, "sim")
    try:
        return SimConfig(**{"split": "train", **values})
    except ConfigError as err:  # SimConfig names its own fields; here they sit in the sim block
        raise ConfigError(f"sim.{err.field}", err.value, err.allowed) from None
