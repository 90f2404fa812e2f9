"""The blocks of a training config: `ppo` (PPOConfig), `imitation` (ImitationConfig), `distributed`
(DistributedConfig) and `wandb` (WandbConfig), and the names their fields may take."""

from __future__ import annotations

from dataclasses import dataclass

from navzoo.config_base import Config, one_of
from navzoo.errors import ConfigError
from navzoo.typed_config import check_field_types

ALGORITHMS = ("ppo", "dagger", "kickstart")
# The algorithms that need a teacher labelling every step (navzoo.train.teacher): DAgger, where it also
# drives a share of the steps, and kickstarting, where the learner always drives.
TEACHER_ALGORITHMS = ("dagger", "kickstart")
OPTIMIZERS = ("adam", "lamb")
LR_SCALINGS = ("none", "sqrt")
BACKENDS = ("auto", "gloo", "nccl")
WANDB_MODES = ("online", "offline", "disabled")
AUX_TASKS = ("cpca", "inverse_dynamics")  # navzoo.train.auxiliary
# The teachers of imitation (navzoo.train.teacher) and the cameras each reads besides the simulator's state;
# the policy teacher reads those of its model (imitation.teacher_model).
TEACHER_SENSORS = {"shortest-path": (), "map-planner": ("depth",), "policy": ()}
# The teachers that plan with numba kernels on the CPU alone; the simulator runs where the policy trains, so a
# run with one of them trains on the CPU.
CPU_TEACHERS = ("map-planner",)


@dataclass(frozen=True)
class PPOConfig(Config):
    """PPO with GAE; defaults are DD-PPO's (Wijmans et al. 2020, habitat-baselines ddppo config)."""

    num_steps: int = 128  # rollout length per environment
    ppo_epoch: int = 2  # passes over each rollout
    num_mini_batch: int = 2  # mini-batches split the environments; every one keeps whole sequences
    clip_param: float = 0.2  # PPO's clipping range of the probability ratio
    value_loss_coef: float = 0.5  # weight of the value loss
    entropy_coef: float = 0.01  # weight of the entropy bonus
    use_clipped_value_loss: bool = True  # clip the value loss as PPO clips the policy's
    gamma: float = 0.99  # discount factor
    tau: float = 0.95  # GAE lambda
    use_normalized_advantage: bool = False  # normalise the advantages of each mini-batch
    optimizer: str = "adam"  # "lamb": timm's Lamb, as BPS trains with large batches
    lr: float = 2.5e-4  # learning rate
    # "sqrt": lr * sqrt(B / reference_batch), B the frames of one mini-batch summed over workers (BPS)
    lr_scaling: str = "none"
    reference_batch: int = 256
    eps: float = 1e-5  # the optimiser's epsilon
    weight_decay: float = 0.0  # the optimiser's weight decay
    max_grad_norm: float = 0.2  # gradients are clipped to this norm
    use_linear_lr_decay: bool = False  # decay lr linearly to 0 over the run (over each stage in a staged run)
    amp: bool = False  # mixed precision: float16 with loss scaling on CUDA, bfloat16 on CPU
    vtrace: bool = False  # correct advantages for policy lag with V-trace (Espeholt et al. 2018)
    vtrace_clip_rho: float = 1.0  # V-trace's clip of the importance weights (rho bar)
    vtrace_clip_c: float = 1.0  # V-trace's clip of the trace coefficients (c bar)
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
            positive_int(f"ppo.{name}", getattr(self, name))
        for name in ("clip_param", "lr", "eps", "max_grad_norm", "vtrace_clip_rho", "vtrace_clip_c"):
            positive(f"ppo.{name}", getattr(self, name))
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
        one_of("ppo.optimizer", self.optimizer, OPTIMIZERS)
        one_of("ppo.lr_scaling", self.lr_scaling, LR_SCALINGS)
        for task in self.aux_tasks:
            one_of("ppo.aux_tasks", task, AUX_TASKS)
        if self.aux_loss_coef < 0:
            raise ConfigError("ppo.aux_loss_coef", self.aux_loss_coef, "a number >= 0")
        positive_int("ppo.cpca_steps", self.cpca_steps)


@dataclass(frozen=True)
class ImitationConfig(Config):
    """DAgger from a teacher in the simulator (algorithm: dagger; navzoo.train.imitation), and the teacher
    of kickstarting (algorithm: kickstart; navzoo.train.kickstart).

    Under DAgger the teacher drives a random share of the steps, decaying linearly from
    `teacher_share_start` to `teacher_share_end` over the first `teacher_decay_frames` frames; the learner
    drives the rest. Under kickstarting the learner drives every step. The rollout, epochs, mini-batches,
    optimiser and value-loss weight come from the `ppo` block.
    """

    # "shortest-path": the straight-line walk over the scene's own distance field (it knows the map).
    # "map-planner": the same walk over a map of the walls the agent's depth camera has shown, unseen space
    # counted free (navzoo.agents.baselines); the simulator renders depth for it where the learner has none.
    # "policy": a trained policy (`teacher_model`: a zoo name, model folder or hf-hub:org/name) with its own
    # cameras, whose actions are drawn from its distribution (policy distillation; navzoo.train.teacher).
    teacher: str = "shortest-path"
    teacher_model: str | None = None  # the policy teacher's model
    teacher_share_start: float = 1.0  # share of the steps the teacher drives at the start of a DAgger run
    teacher_share_end: float = 0.0  # share of the steps the teacher drives after teacher_decay_frames
    teacher_decay_frames: int = 500_000  # frames over which the teacher's share decays linearly
    # Steps where the teacher's action changes (and episode starts) weigh this much more in the loss: the few
    # turns that matter are otherwise drowned by runs of move_forward (Wijmans et al. 2019). 1 turns it off.
    inflection_weight: float = 1.0
    # A stop where the teacher goes on ends the episode in failure, while any other wrong action costs a step
    # or two, so this weighs -log(1 - p(stop)) on every step the teacher does not stop. 0 turns it off.
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
        one_of("imitation.teacher", self.teacher, tuple(TEACHER_SENSORS))
        for name in ("teacher_share_start", "teacher_share_end"):
            if not 0 <= getattr(self, name) <= 1:
                raise ConfigError(f"imitation.{name}", getattr(self, name), "a share in [0, 1]")
        positive_int("imitation.teacher_decay_frames", self.teacher_decay_frames)
        positive("imitation.inflection_weight", self.inflection_weight)
        for name in ("early_stop_weight", "bearing_weight", "depth_weight", "map_weight", "kickstart_weight"):
            if getattr(self, name) < 0:
                raise ConfigError(f"imitation.{name}", getattr(self, name), "a number >= 0")
        if (self.teacher == "policy") != (self.teacher_model is not None):
            raise ConfigError(
                "imitation.teacher_model",
                self.teacher_model,
                "a model (zoo name, folder or hf-hub:org/name) with teacher policy, and unset with any other",
            )
        if self.teacher == "policy":
            # The learner learns the teacher's distribution; reweighing steps by its drawn actions, which
            # change by chance, would skew it, and the teacher has no bearing to predict.
            for name, neutral in (
                ("bearing_weight", 0.0),
                ("inflection_weight", 1.0),
                ("early_stop_weight", 0.0),
            ):
                if getattr(self, name) != neutral:
                    why = f"{neutral:g} with teacher policy (the learner learns its whole distribution)"
                    raise ConfigError(f"imitation.{name}", getattr(self, name), why)
        if self.map_weight > 0 and self.teacher != "map-planner":
            raise ConfigError(
                "imitation.map_weight",
                self.map_weight,
                "0, or teacher map-planner (the map to predict is the one it builds)",
            )


@dataclass(frozen=True)
class WandbConfig(Config):
    """Weights & Biases logging beside TensorBoard and log.jsonl, on when `project` is set (pip install
    'navzoo[wandb]'). A resumed run continues the same W&B run."""

    project: str | None = None  # the W&B project; setting it turns W&B logging on
    entity: str | None = None  # the W&B entity (user or team); default: wandb's
    name: str | None = None  # the W&B run's name; default: the run folder's name
    group: str | None = None  # the W&B group of the run
    tags: tuple[str, ...] = ()  # the W&B tags of the run
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
    timeout_s: float = 600.0  # seconds workers wait for each other (torch.distributed's timeout)

    def __post_init__(self):
        check_field_types(self, "distributed.")

    def validate(self) -> None:
        if not 0 < self.sync_frac <= 1:
            raise ConfigError("distributed.sync_frac", self.sync_frac, "a fraction in (0, 1]")
        one_of("distributed.backend", self.backend, BACKENDS)
        positive("distributed.timeout_s", self.timeout_s)


def positive_int(name: str, value: int) -> None:
    if value < 1:
        raise ConfigError(name, value, "a positive integer")


def positive(name: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(name, value, "a positive number")
