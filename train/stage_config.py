"""The later stages of a training run (the config key `stages`): what each stage changes, and the checks
that a run's stages follow each other and change only what a stage may change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from navzoo.config_base import Config, check_keys, one_of
from navzoo.errors import ConfigError
from navzoo.sim.config import SimConfig
from navzoo.train.config_blocks import ALGORITHMS, TEACHER_ALGORITHMS, ImitationConfig, PPOConfig
from navzoo.typed_config import check_field_types

# The simulator fields a later stage may change (StageConfig.sim and its rank_sim_overrides): the scene
# stream and the episodes drawn from it. The others fix the rollout's shapes or what the policy sees.
STAGE_SIM_FIELDS = (
    "scene_families",
    "scenes_in_memory",
    "episodes_per_scene",
    "min_geodesic",
    "max_geodesic",
    "max_episode_steps",
)


@dataclass(frozen=True)
class StageConfig(Config):
    """A later stage of a run, in the same run: from `from_frames` frames on, until the next stage begins or
    total_frames, it trains with `algorithm`, the `ppo` block changed by `ppo` and the `imitation` block
    changed by `imitation`, with a fresh optimiser and the learning-rate schedule counted from its start.
    "ppo" is DD-PPO fine-tuning (PIRLNav, Ramrakhya et al. 2023; set critic_warmup_updates /
    actor_warmup_updates here); "dagger" goes on imitating, e.g. at a lower, decaying learning rate;
    "kickstart" is DD-PPO with the teacher's cross-entropy added (imitation.kickstart_weight).

    A stage may also train on other scenes: `sim` changes the run's `sim` block (STAGE_SIM_FIELDS) and
    `rank_sim_overrides`, where given, stands for the scene stream of the run's in this stage (e.g. one
    worker's environments all in large offices; what else the run's override sets for a worker, such as
    its number of environments, holds in every stage). Where that changes a worker's simulator, its
    environments all start new episodes in the new scene stream when the stage begins, with a fresh
    recurrent state."""

    from_frames: int = 0  # frames (summed over all workers) at which the stage begins
    algorithm: str = "ppo"  # "ppo", "dagger" or "kickstart"
    ppo: dict[str, Any] = field(default_factory=dict)  # changes to the ppo block (not num_steps)
    imitation: dict[str, Any] = field(default_factory=dict)  # changes to imitation (not the teacher)
    # Changes to the sim block: its scene stream (the fields in STAGE_SIM_FIELDS).
    sim: dict[str, Any] = field(default_factory=dict)
    rank_sim_overrides: dict[int, dict[str, Any]] | None = None  # None: the run's

    def __post_init__(self):
        check_field_types(self, "stages.")
        one_of("stages.algorithm", self.algorithm, ALGORITHMS)

    def ppo_config(self, base: PPOConfig, block: str = "stages") -> PPOConfig:
        """The `ppo` block of this stage; ConfigError for a key PPOConfig does not have or that the
        rollout's size depends on. `block` names the stage in errors."""
        if "num_steps" in self.ppo:
            raise ConfigError(f"{block}.ppo.num_steps", self.ppo["num_steps"], "unset: rollouts keep a size")
        return _changed_block(base, self.ppo, f"{block}.ppo", "ppo")

    def imitation_config(self, base: ImitationConfig, block: str = "stages") -> ImitationConfig:
        """The `imitation` block of this stage; the teacher stays the run's (one teacher labels the whole
        run; a worker that keeps its simulator keeps its teacher's maps across the switch)."""
        for name in ("teacher", "teacher_model"):
            if name in self.imitation:
                raise ConfigError(
                    f"{block}.imitation.{name}", self.imitation[name], f"unset: the run's imitation.{name}"
                )
        return _changed_block(base, self.imitation, f"{block}.imitation", "imitation")


@dataclass(frozen=True)
class StageSettings:
    """What one stage of a run trains with: its algorithm and its `ppo` and `imitation` blocks."""

    algorithm: str
    ppo: PPOConfig
    imitation: ImitationConfig

    @property
    def uses_teacher(self) -> bool:
        return self.algorithm in TEACHER_ALGORITHMS


def parse_stages(data: Any) -> tuple[StageConfig, ...]:
    """The later stages from YAML or JSON: a list of StageConfig mappings, or one mapping, a single stage,
    which with from_frames 0 is none (the shipped blind model's training record holds one so)."""
    if isinstance(data, dict):
        data = [data] if data.get("from_frames") else []
    if not isinstance(data, list | tuple):
        raise ConfigError("stages", data, "a list of stages (mappings of StageConfig fields), or []")
    stages = []
    for index, stage in enumerate(data):
        try:
            stages.append(stage if isinstance(stage, StageConfig) else StageConfig.from_dict(stage))
        except ConfigError as err:  # name the stage: stages.1.algorithm
            field = f"stages.{index}.{err.field.removeprefix('stages.').removeprefix('config')}"
            raise ConfigError(field.rstrip("."), err.value, err.allowed, suggestion=err.suggestion) from None
    return tuple(stages)


def recipe_algorithms(train_config: dict[str, Any]) -> list[str]:
    """The algorithms of a run's stages, in order, from the train_config a model's provenance holds."""
    stages = parse_stages(train_config.get("stages") or [])
    return [train_config.get("algorithm", "ppo"), *(stage.algorithm for stage in stages)]


def check_stages(algorithm: str, stages: tuple[StageConfig, ...], sim: SimConfig) -> None:
    """Each later stage changes only the scene stream of the run's `sim` (check_stage_sim) and starts after
    the one before; once the run or a stage has gone without the teacher, no later stage has it back. So a
    run that starts with DD-PPO may still move through scene streams, e.g. a curriculum of longer episodes."""
    previous_start, teacher_gone = 0, algorithm not in TEACHER_ALGORITHMS
    for index, stage in enumerate(stages):
        check_stage_sim(index, stage, sim)
        if stage.from_frames <= previous_start:
            before = ", where the stage before it starts" if index else ""
            allowed = f"a number of frames > {previous_start}{before}"
            raise ConfigError(f"stages.{index}.from_frames", stage.from_frames, allowed)
        previous_start = stage.from_frames
        if teacher_gone and stage.algorithm in TEACHER_ALGORITHMS:
            why = "a stage before it let the teacher go" if index else f"the run ({algorithm}) has no teacher"
            raise ConfigError(f"stages.{index}.algorithm", stage.algorithm, f"'ppo': {why}")
        teacher_gone = stage.algorithm not in TEACHER_ALGORITHMS


def check_stage_sim(index: int, stage: StageConfig, sim: SimConfig) -> None:
    """A stage's `sim` and `rank_sim_overrides` set only fields of the scene stream, to values the
    simulator (the run's `sim` block) takes."""
    blocks = [(f"stages.{index}.sim", stage.sim)]
    blocks += [
        (f"stages.{index}.rank_sim_overrides.{rank}", changes)
        for rank, changes in (stage.rank_sim_overrides or {}).items()
    ]
    for block, changes in blocks:
        check_keys(SimConfig, changes, block)
        for key, value in changes.items():
            if key not in STAGE_SIM_FIELDS:
                allowed = f"unset: a stage changes only the scene stream ({', '.join(STAGE_SIM_FIELDS)})"
                raise ConfigError(f"{block}.{key}", value, allowed)
    try:
        sim.replace(**stage.sim)
    except ConfigError as err:
        raise ConfigError(f"stages.{index}.sim.{err.field}", err.value, err.allowed) from None


def check_stage_settings(stages: list[tuple[str, StageSettings]]) -> None:
    """What each stage's algorithm allows of its blocks; `stages` as TrainConfig.stage_settings gives them."""
    for block, stage in stages:
        if stage.ppo.aux_tasks and stage.algorithm == "dagger":
            raise ConfigError(
                f"{block}ppo.aux_tasks", stage.ppo.aux_tasks, "[] with algorithm dagger (they serve PPO)"
            )
        for name in ("bearing_weight", "depth_weight", "map_weight"):
            if stage.algorithm == "kickstart" and getattr(stage.imitation, name) > 0:
                raise ConfigError(
                    f"{block}imitation.{name}",
                    getattr(stage.imitation, name),
                    "0 with kickstart (the heads are DAgger's; kickstarting adds the teacher's actions)",
                )


def _changed_block(base: Any, changes: dict[str, Any], block: str, prefix: str) -> Any:
    """`base` with `changes`, validated, errors naming `block` instead of `prefix`."""
    check_keys(type(base), changes, block)
    try:
        config = base.replace(**changes)
        config.validate()
    except ConfigError as err:
        field = f"{block}{err.field.removeprefix(prefix)}"
        raise ConfigError(field, err.value, err.allowed, suggestion=err.suggestion) from None
    return config
