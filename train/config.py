"""Training configuration: YAML presets plus `key=value` overrides, checked into frozen dataclasses.

A config has these blocks and a few run-level fields:

    model: bps-se-resnet9        # zoo architecture the policy is built from
    policy: {hidden_size: 256}   # PolicyConfig fields that change it (sensors and resolution follow `sim`)
    sim: {...}                   # SimConfig fields for each worker's batch of environments
    algorithm: ppo               # ppo (DD-PPO), dagger or kickstart
    ppo: {...}                   # PPOConfig: the update, its optimiser and rollouts
    imitation: {...}             # ImitationConfig: the teacher of dagger and kickstart
    finetune: [...]              # the run's later stages (FinetuneConfig), each changing ppo, imitation
                                 # and the scene stream (sim, rank_sim_overrides)
    distributed: {...}           # DistributedConfig: preemption threshold, backend

Overrides use dotted names, values parsed as YAML: `ppo.lr=1e-4 sim.num_envs=32 total_frames=2e6`; an
item of a list is named by its index: `finetune.1.ppo.lr=5e-5`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from navzoo.config_base import Config, check_keys
from navzoo.errors import ConfigError
from navzoo.models.configuration import GOAL_SENSOR, PolicyConfig
from navzoo.names import SEEN_MAP
from navzoo.sim.config import SimConfig
from navzoo.sim.scenes import stable_seed
from navzoo.tasks import get_task
from navzoo.train.config_options import preset_names, presets_folder
from navzoo.typed_config import check_field_types, is_decimal
from navzoo.zoo.loader import model_entry

ALGORITHMS = ("ppo", "dagger", "kickstart")
# The algorithms that need a teacher labelling every step (navzoo.train.teacher): DAgger, where it also
# drives a share of the steps, and kickstarting, where the learner always drives.
TEACHER_ALGORITHMS = ("dagger", "kickstart")
OPTIMIZERS = ("adam", "lamb")
LR_SCALINGS = ("none", "sqrt")
BACKENDS = ("auto", "gloo", "nccl")
WANDB_MODES = ("online", "offline", "disabled")
AUX_TASKS = ("cpca", "inverse_dynamics")  # navzoo.train.auxiliary
# The teachers of imitation (navzoo.train.teacher) and the cameras each reads besides the simulator's state.
TEACHER_SENSORS = {"shortest-path": (), "map-planner": ("depth",)}
# The teachers that plan with numba kernels on the CPU alone; the simulator runs where the policy trains, so a
# run with one of them trains on the CPU.
CPU_TEACHERS = ("map-planner",)
# The simulator fields a later stage may change (FinetuneConfig.sim and its rank_sim_overrides): the scene
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
class PPOConfig(Config):
    """PPO with GAE; defaults are DD-PPO's (Wijmans et al. 2020, habitat-baselines ddppo config)."""

    num_steps: int = 128  # rollout length per environment
    ppo_epoch: int = 2
    num_mini_batch: int = 2  # mini-batches split the environments; every one keeps whole sequences
    clip_param: float = 0.2
    value_loss_coef: float = 0.5
    entropy_coef: float = 0.01
    use_clipped_value_loss: bool = True
    gamma: float = 0.99
    tau: float = 0.95  # GAE lambda
    use_normalized_advantage: bool = False
    optimizer: str = "adam"  # "lamb": timm's Lamb, as BPS trains with large batches
    lr: float = 2.5e-4
    # "sqrt": lr * sqrt(B / reference_batch), B the frames of one mini-batch summed over workers (BPS)
    lr_scaling: str = "none"
    reference_batch: int = 256
    eps: float = 1e-5
    weight_decay: float = 0.0
    max_grad_norm: float = 0.2
    use_linear_lr_decay: bool = False
    amp: bool = False  # mixed precision: float16 with loss scaling on CUDA, bfloat16 on CPU
    vtrace: bool = False  # correct advantages for policy lag with V-trace (Espeholt et al. 2018)
    vtrace_clip_rho: float = 1.0
    vtrace_clip_c: float = 1.0
    # Fine-tuning a policy that did not learn by RL (init_from an imitation run): for the first
    # critic_warmup_updates only the critic head learns, the rest frozen, so the value function fits this
    # policy's returns before advantages steer it; then the actor's learning rate rises linearly from 0
    # over actor_warmup_updates. Without both, the policy first collapses (PIRLNav, Ramrakhya et al. 2023).
    critic_warmup_updates: int = 0
    actor_warmup_updates: int = 0
    # The actor's learning rate as a share of lr (the critic head's), after its warm-up. Fine-tuning a
    # trained policy wants a fresh critic to learn fast and the policy to move slowly (PIRLNav's actor
    # learns at a small fraction of its critic's rate).
    actor_lr_scale: float = 1.0
    # Self-supervised auxiliary tasks (Ye et al. 2020; navzoo.train.auxiliary): "cpca" (action-conditional
    # CPC over cpca_steps steps) and/or "inverse_dynamics", each weighted aux_loss_coef in the loss.
    aux_tasks: tuple[str, ...] = ()
    aux_loss_coef: float = 0.1
    cpca_steps: int = 16

    def __post_init__(self):
        check_field_types(self, "ppo.")

    def validate(self) -> None:
        for name in ("num_steps", "ppo_epoch", "num_mini_batch", "reference_batch"):
            _positive_int(f"ppo.{name}", getattr(self, name))
        for name in ("clip_param", "lr", "eps", "max_grad_norm", "vtrace_clip_rho", "vtrace_clip_c"):
            _positive(f"ppo.{name}", getattr(self, name))
        for name in ("gamma", "tau"):
            if not 0 <= getattr(self, name) <= 1:
                raise ConfigError(f"ppo.{name}", getattr(self, name), "a number in [0, 1]")
        for name in ("value_loss_coef", "entropy_coef", "weight_decay"):
            if getattr(self, name) < 0:
                raise ConfigError(f"ppo.{name}", getattr(self, name), "a number >= 0")
        for name in ("critic_warmup_updates", "actor_warmup_updates"):
            if getattr(self, name) < 0:
                raise ConfigError(f"ppo.{name}", getattr(self, name), "an integer >= 0")
        if not 0 < self.actor_lr_scale <= 1:
            raise ConfigError("ppo.actor_lr_scale", self.actor_lr_scale, "a share in (0, 1]")
        _one_of("ppo.optimizer", self.optimizer, OPTIMIZERS)
        _one_of("ppo.lr_scaling", self.lr_scaling, LR_SCALINGS)
        for task in self.aux_tasks:
            _one_of("ppo.aux_tasks", task, AUX_TASKS)
        if self.aux_loss_coef < 0:
            raise ConfigError("ppo.aux_loss_coef", self.aux_loss_coef, "a number >= 0")
        _positive_int("ppo.cpca_steps", self.cpca_steps)


@dataclass(frozen=True)
class ImitationConfig(Config):
    """DAgger from a teacher in the simulator (algorithm: dagger; navzoo.train.imitation), and the teacher
    of kickstarting (algorithm: kickstart; navzoo.train.kickstart).

    Under DAgger the teacher (the oracle) drives a random share of the steps, decaying linearly from
    `oracle_share_start` to `oracle_share_end` over the first `oracle_decay_frames` frames; the learner
    drives the rest. Under kickstarting the learner drives every step. The rollout, epochs, mini-batches,
    optimiser and value-loss weight come from the `ppo` block.
    """

    # "shortest-path": the straight-line walk over the scene's own distance field (it knows the map).
    # "map-planner": the same walk over a map of the walls the agent's depth camera has shown, unseen space
    # counted free (navzoo.agents.baselines); the simulator renders depth for it where the learner has none.
    teacher: str = "shortest-path"
    oracle_share_start: float = 1.0
    oracle_share_end: float = 0.0
    oracle_decay_frames: int = 500_000
    # Steps where the oracle's action changes (and episode starts) weigh this much more in the loss: the few
    # turns that matter are otherwise drowned by runs of move_forward (Wijmans et al. 2019). 1 turns it off.
    inflection_weight: float = 1.0
    # A stop where the oracle goes on ends the episode in failure, while any other wrong action costs a step
    # or two, so this weighs -log(1 - p(stop)) on every step the oracle does not stop. 0 turns it off.
    early_stop_weight: float = 0.0
    # Weight of an auxiliary loss: predict the teacher's bearing (the direction of its way relative to the
    # agent's heading, as cos and sin) from the policy's recurrent features, with a linear head that is
    # trained beside the policy and not exported. Every step then teaches a direction, not only which of
    # four actions it leads to. 0 turns it off.
    bearing_weight: float = 0.0
    # Weight of an auxiliary loss: predict the depth image, average-pooled to 16x16, from the visual
    # embedding, with a linear head trained beside the policy and not exported (depth prediction, Mirowski
    # et al. 2017). It teaches an RGB encoder the geometry the teacher plans on; the simulator renders depth
    # for it where the learner has none. 0 turns it off.
    depth_weight: float = 0.0
    # Weight of an auxiliary loss: predict, from the policy's recurrent features, which squares of an
    # 8 m x 8 m grid around the agent (16 x 16, in its frame) hold walls it has seen this episode, as the
    # map-planner teacher mapped them, with a linear head trained beside the policy and not exported. The
    # walls behind the agent are only in its memory, so this asks the memory to keep a map. It needs
    # teacher map-planner. 0 turns it off.
    map_weight: float = 0.0
    # Kickstarting (Schmitt et al. 2018): the weight of the teacher's cross-entropy (inflection-weighted, as
    # DAgger's) added to DD-PPO's loss. Where the teacher is clear the imitation term holds the policy to
    # it; where the learner cannot tell what the teacher would do, that term is at its floor and the
    # rewards decide, e.g. to keep turning one way instead of dithering.
    kickstart_weight: float = 1.0

    def __post_init__(self):
        check_field_types(self, "imitation.")

    def validate(self) -> None:
        _one_of("imitation.teacher", self.teacher, tuple(TEACHER_SENSORS))
        for name in ("oracle_share_start", "oracle_share_end"):
            if not 0 <= getattr(self, name) <= 1:
                raise ConfigError(f"imitation.{name}", getattr(self, name), "a share in [0, 1]")
        _positive_int("imitation.oracle_decay_frames", self.oracle_decay_frames)
        _positive("imitation.inflection_weight", self.inflection_weight)
        for name in ("early_stop_weight", "bearing_weight", "depth_weight", "map_weight", "kickstart_weight"):
            if getattr(self, name) < 0:
                raise ConfigError(f"imitation.{name}", getattr(self, name), "a number >= 0")
        if self.map_weight > 0 and self.teacher != "map-planner":
            raise ConfigError(
                "imitation.map_weight",
                self.map_weight,
                "0, or teacher map-planner (the map to predict is the one it builds)",
            )


@dataclass(frozen=True)
class FinetuneConfig(Config):
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

    from_frames: int = 0
    algorithm: str = "ppo"
    ppo: dict[str, Any] = field(default_factory=dict)
    imitation: dict[str, Any] = field(default_factory=dict)
    sim: dict[str, Any] = field(default_factory=dict)
    rank_sim_overrides: dict[int, dict[str, Any]] | None = None  # None: the run's

    def __post_init__(self):
        check_field_types(self, "finetune.")
        _one_of("finetune.algorithm", self.algorithm, ALGORITHMS)

    def ppo_config(self, base: PPOConfig, block: str = "finetune") -> PPOConfig:
        """The `ppo` block of this stage; ConfigError for a key PPOConfig does not have or that the
        rollout's size depends on. `block` names the stage in errors."""
        if "num_steps" in self.ppo:
            raise ConfigError(f"{block}.ppo.num_steps", self.ppo["num_steps"], "unset: rollouts keep a size")
        return _changed_block(base, self.ppo, f"{block}.ppo", "ppo")

    def imitation_config(self, base: ImitationConfig, block: str = "finetune") -> ImitationConfig:
        """The `imitation` block of this stage; the teacher stays the run's (one teacher labels the whole
        run; a worker that keeps its simulator keeps its teacher's maps across the switch)."""
        if "teacher" in self.imitation:
            raise ConfigError(
                f"{block}.imitation.teacher",
                self.imitation["teacher"],
                "unset: set the run's imitation.teacher",
            )
        return _changed_block(base, self.imitation, f"{block}.imitation", "imitation")


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


@dataclass(frozen=True)
class WandbConfig(Config):
    """Weights & Biases logging beside TensorBoard and log.jsonl, on when `project` is set (pip install
    'navzoo[wandb]'). A resumed run continues the same W&B run."""

    project: str | None = None
    entity: str | None = None
    name: str | None = None  # the W&B run's name; default: the run folder's name
    group: str | None = None
    tags: tuple[str, ...] = ()
    mode: str | None = None  # "online", "offline" or "disabled"; None leaves it to wandb (WANDB_MODE)

    def __post_init__(self):
        check_field_types(self, "wandb.")
        if self.mode not in (None, *WANDB_MODES):
            raise ConfigError("wandb.mode", self.mode, WANDB_MODES)


@dataclass(frozen=True)
class DistributedConfig(Config):
    # Once at least sync_frac * workers have finished their rollouts the others stop early (never before a
    # quarter of the rollout). 1.0 turns preemption off; so does 0.6 with 2 workers (1.2 would have to be
    # done, and a straggler is never counted), so use 0.5 there.
    sync_frac: float = 0.6
    backend: str = "auto"  # gloo on CPU, nccl on CUDA
    timeout_s: float = 600.0

    def __post_init__(self):
        check_field_types(self, "distributed.")

    def validate(self) -> None:
        if not 0 < self.sync_frac <= 1:
            raise ConfigError("distributed.sync_frac", self.sync_frac, "a fraction in (0, 1]")
        _one_of("distributed.backend", self.backend, BACKENDS)
        _positive("distributed.timeout_s", self.timeout_s)


@dataclass(frozen=True)
class TrainConfig(Config):
    # The zoo architecture to train; None when the caller builds the policy (navzoo finetune).
    model: str | None = "bps-se-resnet9"
    # Start from the weights of this model (a model or run folder, a zoo name or hf-hub:org/name) of the
    # same architecture instead of a fresh initialisation, e.g. an imitation run fine-tuned by DD-PPO.
    init_from: str | None = None
    policy: dict[str, Any] = field(default_factory=dict)
    sim: SimConfig = field(default_factory=lambda: SimConfig(split="train"))
    # "ppo": DD-PPO; "dagger": imitation of a teacher (settings in `imitation`); "kickstart": DD-PPO with the
    # teacher's cross-entropy added to its loss (imitation.kickstart_weight).
    algorithm: str = "ppo"
    ppo: PPOConfig = field(default_factory=PPOConfig)
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    # The later stages of the run, in order (FinetuneConfig): e.g. DD-PPO after imitation. YAML may give
    # one stage as a mapping (one with from_frames 0 is none); errors name a stage by its index.
    finetune: tuple[FinetuneConfig, ...] = ()
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    total_frames: int = 10_000_000  # frames of experience summed over all workers
    seed: int = 0
    device: str = "auto"  # "auto": the worker's CUDA device when there is one, else CPU
    checkpoint_every: int = 50  # updates between checkpoints (one is always written at the end)
    keep_checkpoints: int = 3
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
        _one_of("algorithm", self.algorithm, ALGORITHMS)
        if self.uses_teacher and not get_task(self.sim.task).has_goal:
            raise ConfigError(
                "algorithm",
                self.algorithm,
                f"'ppo' on {self.sim.task}: {self.algorithm}'s teacher walks to a goal, which it has not",
            )
        stages = self._validate_stages()
        if self.sim.split != "train":
            raise ConfigError("sim.split", self.sim.split, "'train' (evaluate other splits with navzoo eval)")
        if self.sim.num_envs < self.ppo.num_mini_batch:
            raise ConfigError(
                "ppo.num_mini_batch", self.ppo.num_mini_batch, f"at most sim.num_envs={self.sim.num_envs}"
            )
        _positive_int("total_frames", self.total_frames)
        for name in ("checkpoint_every", "keep_checkpoints", "log_every"):
            _positive_int(name, getattr(self, name))
        if self.torch_threads < 0:
            raise ConfigError("torch_threads", self.torch_threads, "0 (automatic) or a positive integer")
        _one_of("device", self.device.split(":")[0], ("auto", "cpu", "cuda"))
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
        for stage in range(len(self.finetune) + 1):
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
        if self.finetune and self.algorithm != "dagger":
            starts = [stage.from_frames for stage in self.finetune]
            raise ConfigError(
                "finetune", starts, "[] unless algorithm is dagger (later stages follow imitation)"
            )
        previous_start, teacher_gone = 0, False
        for index, stage in enumerate(self.finetune):
            self._check_stage_sim(index, stage)
            if stage.from_frames <= previous_start:
                before = ", where the stage before it starts" if index else ""
                allowed = f"a number of frames > {previous_start}{before}"
                raise ConfigError(f"finetune.{index}.from_frames", stage.from_frames, allowed)
            previous_start = stage.from_frames
            if teacher_gone and stage.algorithm in TEACHER_ALGORITHMS:
                raise ConfigError(
                    f"finetune.{index}.algorithm",
                    stage.algorithm,
                    "'ppo': a stage before it let the teacher go",
                )
            teacher_gone = stage.algorithm not in TEACHER_ALGORITHMS
        stages = self.stage_settings()
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
        return stages

    def _check_stage_sim(self, index: int, stage: FinetuneConfig) -> None:
        """A stage's `sim` and `rank_sim_overrides` set only fields of the scene stream, to values the
        simulator takes."""
        blocks = [(f"finetune.{index}.sim", stage.sim)]
        blocks += [
            (f"finetune.{index}.rank_sim_overrides.{rank}", changes)
            for rank, changes in (stage.rank_sim_overrides or {}).items()
        ]
        for block, changes in blocks:
            check_keys(SimConfig, changes, block)
            for key, value in changes.items():
                if key not in STAGE_SIM_FIELDS:
                    allowed = f"unset: a stage changes only the scene stream ({', '.join(STAGE_SIM_FIELDS)})"
                    raise ConfigError(f"{block}.{key}", value, allowed)
        try:
            self.sim.replace(**stage.sim)
        except ConfigError as err:
            raise ConfigError(f"finetune.{index}.sim.{err.field}", err.value, err.allowed) from None

    def stage_settings(self) -> list[tuple[str, StageSettings]]:
        """Every stage of the run with the settings it trains with, and the prefix that names its keys:
        "" for the first stage, "finetune.<index>." for a later one."""
        first = StageSettings(self.algorithm, self.ppo, self.imitation)
        later = [
            (
                f"finetune.{i}.",
                StageSettings(
                    stage.algorithm,
                    stage.ppo_config(self.ppo, f"finetune.{i}"),
                    stage.imitation_config(self.imitation, f"finetune.{i}"),
                ),
            )
            for i, stage in enumerate(self.finetune)
        ]
        return [("", first), *later]

    def policy_config(self) -> PolicyConfig:
        """The zoo architecture `model` with `policy` overrides; sensors and resolution follow `sim`."""
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

    def sim_for_rank(self, rank: int, stage: int = 0) -> SimConfig:
        """Worker `rank`'s simulator in stage `stage` (0 the first, i the run's finetune[i - 1]): the `sim`
        block as the stage changes it, the rank's overrides, its own seed (so its own scene stream), and the
        cameras an imitation teacher reads that the policy does not (teacher_only_sensors). A stage that
        leaves the simulator as the stage before had it gets the same config, so its environments go on; one
        that changes it gets a seed of its own, so its episodes are not the first stage's drawn again."""
        sim, changes = self._stage_sim(rank, stage)
        first = stage  # the stage since which this simulator holds
        while first and self._stage_sim(rank, first - 1)[0] == sim:
            first -= 1
        seed = (
            self.seed * 1000 + rank
            if first == 0
            else stable_seed("stage", self.seed, rank, first) & 0x7FFFFFFF
        )
        defaults = {"seed": seed, "sensors": (*self.sim.sensors, *self.teacher_only_sensors())}
        return sim.replace(**{key: value for key, value in defaults.items() if key not in changes})

    def overridden_ranks(self) -> set[int]:
        """The workers that the run's or a stage's rank_sim_overrides name."""
        stages = [stage.rank_sim_overrides or {} for stage in self.finetune]
        return {rank for overrides in (self.rank_sim_overrides, *stages) for rank in overrides}

    def _stage_sim(self, rank: int, stage: int) -> tuple[SimConfig, dict[str, Any]]:
        """Worker `rank`'s simulator in stage `stage` before its seed and teacher cameras are added (the
        `sim` block as the stage changes it, with the rank's overrides), and those overrides."""
        sim = self.sim.replace(**self.finetune[stage - 1].sim) if stage else self.sim
        changes = self.rank_sim_overrides.get(rank, {})
        block, where = "rank_sim_overrides", f" (in stage finetune.{stage - 1})" if stage else ""
        stage_overrides = self.finetune[stage - 1].rank_sim_overrides if stage else None
        if stage_overrides is not None:
            # The stage's overrides stand for the scene stream of the run's; the rest of a worker's holds.
            kept = {key: value for key, value in changes.items() if key not in STAGE_SIM_FIELDS}
            changes = {**kept, **stage_overrides.get(rank, {})}
            block, where = f"finetune.{stage - 1}.rank_sim_overrides", ""
        try:
            return sim.replace(**changes), changes
        except TypeError:
            raise ConfigError(block, changes, "SimConfig fields") from None
        except ConfigError as err:
            raise ConfigError(f"{block}.{rank}.{err.field}", err.value, err.allowed + where) from None

    def teacher_only_sensors(self) -> tuple[str, ...]:
        """Cameras the simulator renders for the imitation teacher alone (not stored, not seen by the
        policy): the map-planner's depth, and the depth head's target (imitation.depth_weight), where the
        learner sees RGB."""
        if not self.uses_teacher:
            return ()
        wanted = TEACHER_SENSORS[self.imitation.teacher]
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
        if "finetune" in data:
            data = {**data, "finetune": _stages(data["finetune"])}
        config = super().from_dict(data, block)
        config.validate()
        return config


@dataclass(frozen=True)
class StageSettings:
    """What one stage of a run trains with: its algorithm and its `ppo` and `imitation` blocks."""

    algorithm: str
    ppo: PPOConfig
    imitation: ImitationConfig

    @property
    def uses_teacher(self) -> bool:
        return self.algorithm in TEACHER_ALGORITHMS


def _stages(data: Any) -> tuple[FinetuneConfig, ...]:
    """The later stages from YAML or JSON: a list of FinetuneConfig mappings, or one mapping (as configs
    held it before a run could have more than two stages), which with from_frames 0 is none."""
    if isinstance(data, dict):
        data = [data] if data.get("from_frames") else []
    if not isinstance(data, list | tuple):
        raise ConfigError("finetune", data, "a list of stages (mappings of FinetuneConfig fields), or []")
    stages = []
    for index, stage in enumerate(data):
        try:
            stages.append(stage if isinstance(stage, FinetuneConfig) else FinetuneConfig.from_dict(stage))
        except ConfigError as err:  # name the stage: finetune.1.algorithm
            field = f"finetune.{index}.{err.field.removeprefix('finetune.').removeprefix('config')}"
            raise ConfigError(field.rstrip("."), err.value, err.allowed, suggestion=err.suggestion) from None
    return tuple(stages)


def recipe_algorithms(train_config: dict[str, Any]) -> list[str]:
    """The algorithms of a run's stages, in order, from the train_config a model's provenance holds (one
    written before runs had more than two stages holds `finetune` as one mapping)."""
    stages = _stages(train_config.get("finetune") or [])
    return [train_config.get("algorithm", "ppo"), *(stage.algorithm for stage in stages)]


def load_config(source: str | Path, overrides: list[str] = ()) -> TrainConfig:
    """A preset name or a YAML file, then `key=value` overrides applied in order."""
    path = Path(source)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise ConfigError("config", str(source), "an existing YAML file or a preset: " + _presets_text())
        text = path.read_text()
    elif source in preset_names():
        text = (presets_folder() / f"{source}.yaml").read_text()
    else:
        raise ConfigError("config", str(source), "a YAML file or a preset: " + _presets_text())
    try:
        data = yaml.load(text, Loader=_YamlLoader) or {}
    except yaml.YAMLError as err:
        raise ConfigError("config", str(source), f"valid YAML ({err})") from None
    for item in overrides:
        apply_override(data, item)
    return TrainConfig.from_dict(data)


def apply_override(data: dict[str, Any], item: str) -> None:
    """Set `a.b.c=value` in a nested dict; the value is parsed as YAML (numbers, lists, booleans)."""
    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise ConfigError("override", item, "key=value, e.g. ppo.lr=1e-4 or sim.num_envs=32")
    *parents, leaf = key.split(".")
    node = data
    for position, name in enumerate(parents):
        # A list holds blocks named by their index, e.g. the stages: finetune.1.ppo.lr=1e-4
        node = _list_item(node, name, item) if isinstance(node, list) else node.setdefault(name, {})
        if isinstance(node, list) and position == len(parents) - 1:
            raise ConfigError(
                "override",
                item,
                f"a key inside a block ({name!r} is a list: name an item, {name}.0.{leaf}=..., "
                f"or give the list, {name}=[...])",
            )
        if not isinstance(node, dict | list):
            raise ConfigError("override", item, f"a key inside a block ({name!r} is not one)")
    try:
        node[leaf] = yaml.load(raw, Loader=_YamlLoader)
    except yaml.YAMLError:
        node[leaf] = raw


class _YamlLoader(yaml.SafeLoader):
    """Safe YAML that also reads 1e-4 and 1e7 as numbers (YAML 1.1 wants a dot and a signed exponent)."""


_YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def _presets_text() -> str:
    return ", ".join(preset_names())


def _train_sim(values: Any) -> SimConfig:
    """The `sim` block of a training config: on the train split unless it says otherwise."""
    check_keys(SimConfig, values, "sim")
    try:
        return SimConfig(**{"split": "train", **values})
    except ConfigError as err:  # SimConfig names its own fields; here they sit in the sim block
        raise ConfigError(f"sim.{err.field}", err.value, err.allowed) from None


def _positive_int(name: str, value: int) -> None:
    if value < 1:
        raise ConfigError(name, value, "a positive integer")


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(name, value, "a positive number")


def _one_of(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ConfigError(name, value, allowed)


def _list_item(items: list, index: str, item: str) -> Any:
    if not (is_decimal(index) and int(index) < len(items)):
        raise ConfigError("override", item, f"an index below {len(items)} where the key names a list item")
    return items[int(index)]
