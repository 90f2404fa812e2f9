"""DD-PPO: every worker collects a rollout in its own batch of environments, then all of them take the same
PPO steps with gradients all-reduced by DistributedDataParallel (Wijmans et al. 2020). With
`algorithm: dagger` the same loop imitates a teacher instead (navzoo.train.imitation), and with
`algorithm: kickstart` it adds the teacher's cross-entropy to PPO's loss (navzoo.train.kickstart).

One update: collect up to `ppo.num_steps` steps (stopping early once enough workers are done, see
RolloutPreemption), compute GAE, run the PPO epochs, all-reduce the statistics, log, and checkpoint at the
interval. SIGTERM (and SLURM's SIGUSR1, which also requeues the job) makes every worker finish the current
update, write a checkpoint and exit. Callbacks (navzoo.train.callbacks) hook into the run at its start,
after every update and checkpoint, and at its end.
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import yaml

from navzoo.errors import ConfigError
from navzoo.models import VISUAL_FEATURES_KEY, ActorCritic, ModelMetadata, PointNavPolicy
from navzoo.models.map_encoder import add_seen_map
from navzoo.models.weights import save_pretrained
from navzoo.names import SEEN_MAP
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.storage.destination import check_destination
from navzoo.tasks import get_task
from navzoo.train import checkpoint as ckpt
from navzoo.train.callbacks import TrainerCallback
from navzoo.train.config import (
    TEACHER_ALGORITHMS,
    ImitationConfig,
    PPOConfig,
    TrainConfig,
    recipe_algorithms,
)
from navzoo.train.distributed import (
    RolloutPreemption,
    Workers,
    all_reduce,
    close_workers,
    init_workers,
    restart_count,
)
from navzoo.train.episode_window import EpisodeWindow
from navzoo.train.imitation import DAgger, ImitationHeads, OracleTeacher
from navzoo.train.kickstart import Kickstart
from navzoo.train.logger import TrainLogger, plot_learning_curve
from navzoo.train.ppo import PPO
from navzoo.train.rollout import RolloutStorage
from navzoo.zoo.loader import load

CONFIG_FILE = "train_config.yaml"
CHECKPOINT_FORMAT = "navzoo-train-checkpoint"
COMMON_METRICS = ("episode_return", "num_steps", "path_length", "collisions")
# The config keys a model's tensors depend on, named when a resume finds tensors of another shape.
ARCHITECTURE_KEYS = ("model", "policy.", "sim.sensors", "sim.resolution", "sim.task", "sim.seen_map_")


@dataclass
class PolicySpec:
    """A policy built by the caller instead of from the config's zoo architecture (navzoo.transfer).

    Every worker builds it after the same seed, so all of them start from the same parameters; the trainer
    trains this module in place.
    """

    policy: ActorCritic
    source: str  # the command that trains it, recorded in the exported model's provenance
    provenance: dict[str, Any] = field(default_factory=dict)  # added to the exported model's provenance
    files: dict[str, str] = field(default_factory=dict)  # name -> text, written into a new run folder


@dataclass
class TrainResult:
    run_dir: Path
    updates: int
    frames: int
    stopped_by: str | None  # name of the signal that ended the run early
    metrics: dict[str, float]


def train(
    config: TrainConfig,
    run_dir: str | Path,
    resume: bool = False,
    spec: PolicySpec | None = None,
    overwrite: bool = False,
    callbacks: Sequence[TrainerCallback] = (),
) -> TrainResult:
    """Train in this process; under torchrun every worker calls this with the same arguments.

    A new run needs a new or empty `run_dir`, or `overwrite=True` to write into one that holds files
    (nothing of them is deleted); a folder with checkpoints is continued with `resume=True`.
    """
    if spec is None and config.model is None:
        raise ConfigError("model", None, "a zoo architecture (only navzoo finetune builds its own policy)")
    workers = init_workers(config.distributed, config.worker_device())
    try:
        # No name holds the trainer, so its DDP model (which holds the process group) is gone before the
        # group is destroyed; gloo's threads outliving it to interpreter shutdown can abort the process.
        return Trainer(config, Path(run_dir), workers, spec, callbacks).run(
            resume or restart_count() > 0, overwrite
        )
    finally:
        close_workers()


class Trainer:
    def __init__(
        self,
        config: TrainConfig,
        run_dir: Path,
        workers: Workers,
        spec: PolicySpec | None = None,
        callbacks: Sequence[TrainerCallback] = (),
    ):
        self.config, self.run_dir, self.workers, self.spec = config, run_dir, workers, spec
        self.callbacks = tuple(callbacks)
        self.device = workers.device
        cores = os.cpu_count() or 1
        torch.set_num_threads(config.torch_threads or max(1, cores // workers.local_world_size))
        torch.manual_seed(config.seed)  # the same initial parameters on every worker
        if spec is None:
            trained_for = ModelMetadata(task=config.sim.task)
            policy = PointNavPolicy(config.policy_config().replace(metadata=trained_for))
        else:
            policy = spec.policy  # built for the task by the caller
        self.policy = policy.to(self.device)
        self.policy.train()
        encoder = self.policy.visual_encoder
        # A frozen encoder's features never change, so the rollout stores them instead of the images and
        # the PPO epochs skip the encoder.
        self.frozen_encoder = encoder if encoder is not None and encoder.frozen else None
        torch.manual_seed(config.seed * 1000 + workers.rank + 1)  # each worker's own action samples
        self.sim = BatchSim(self._sim_config(stage=0))
        self.teacher_only_sensors = config.teacher_only_sensors()
        self.sim_observations: dict[str, torch.Tensor] = {}  # the simulator's latest, for the teacher
        self.frames_per_update = config.frames_per_update(workers.world_size)
        self.teacher = None
        if config.uses_teacher:
            self.teacher = OracleTeacher(self.sim, config.imitation, drives=config.algorithm == "dagger")
        self.ppo = self._update_rule(config.algorithm, config.ppo, config.imitation)
        # The stages done so far in this run (the later ones are config.finetune).
        self.stages: list[dict[str, Any]] = []  # finished stages: algorithm, frames, wall time
        self.stage_start = (0, 0, 0.0)  # (update, frames, elapsed_s) where the current stage began
        self.preemption = RolloutPreemption(
            workers.store, workers.world_size, config.distributed.sync_frac, config.ppo.num_steps
        )
        self.update = self.frames = self.episodes = 0
        self.initialised_from: dict[str, Any] | None = None  # init_from's provenance, kept in checkpoints
        self.elapsed_s = 0.0
        self.window = EpisodeWindow(self._metric_names())
        self.stop_signal: int | None = None  # set by a signal handler on this worker
        self.stop_reason: str | None = None  # set on every worker at once, from the all-reduced flag

    def _lr(self, ppo: PPOConfig) -> float:
        """The learning rate of a `ppo` block, scaled by the batch size where it asks (BPS)."""
        lr = ppo.lr
        if ppo.lr_scaling == "sqrt":
            batch = self.frames_per_update / ppo.num_mini_batch
            lr *= math.sqrt(batch / ppo.reference_batch)
        return lr

    def _sim_config(self, stage: int) -> SimConfig:
        """This worker's simulator in stage `stage` of the run, on its device."""
        return self.config.sim_for_rank(self.workers.rank, stage).replace(device=str(self.device))

    def _start_next_stage(self, storage: RolloutStorage) -> None:
        """Begin the run's next stage (config.finetune) with a fresh optimiser: DD-PPO with no teacher from
        here on (PIRLNav), kickstarting, whose teacher labels and no longer drives, or more imitation, each
        with the stage's own `ppo` and `imitation` blocks, and in its own scene stream where it sets one."""
        stage = len(self.stages) + 1
        _, settings = self.config.stage_settings()[stage]
        self.stages.append(self._current_stage())
        self.stage_start = (self.update, self.frames, self.elapsed_s)
        if (sim_config := self._sim_config(stage)) != self.sim.config:
            self._restart_environments(sim_config, storage)
        # DAgger's heads go on learning in a DAgger stage that follows one.
        heads = self.ppo.trainable.head if isinstance(self.ppo, DAgger) else None
        if not settings.uses_teacher:
            self.teacher = None
        else:
            self.teacher.config = settings.imitation
            self.teacher.drives = settings.algorithm == "dagger"  # PPO learns from the learner's own actions
        self.ppo = self._update_rule(settings.algorithm, settings.ppo, settings.imitation, heads)

    def _restart_environments(self, sim_config: SimConfig, storage: RolloutStorage) -> None:
        """Move this worker to a new simulator: every environment starts a new episode in it, with a fresh
        recurrent state and, under a teacher, a fresh teacher's memory, as at the start of a run."""
        self.sim.close()
        self.sim = BatchSim(sim_config)
        if self.teacher is not None:
            self.teacher = OracleTeacher(self.sim, self.teacher.config, self.teacher.drives)
        storage.restart(self._observe(self.sim.reset()), self.policy.initial_state(self.sim.num_envs))

    def _next_stage_from(self) -> int | None:
        """The frame where the next stage begins; None in the last stage."""
        later = self.config.finetune[len(self.stages) :]
        return later[0].from_frames if later else None

    def _update_rule(
        self, algorithm: str, ppo: PPOConfig, imitation: ImitationConfig, heads: ImitationHeads | None = None
    ) -> PPO:
        """The update of `algorithm` with the settings of `ppo` (and the teacher's `imitation`) and a fresh
        optimiser; `heads`: DAgger's heads of an earlier stage, which go on learning."""
        distributed = self.workers.distributed
        if algorithm == "dagger":
            return DAgger(self.policy, ppo, imitation, self._lr(ppo), self.device, distributed, heads)
        if algorithm == "kickstart":
            return Kickstart(self.policy, ppo, imitation, self._lr(ppo), self.device, distributed)
        return PPO(self.policy, ppo, self._lr(ppo), self.device, distributed)

    def _current_stage(self) -> dict[str, Any]:
        """The stage running now, as far as it has come: its algorithm, frames and wall time."""
        _, frames, elapsed = self.stage_start
        _, settings = self.config.stage_settings()[len(self.stages)]
        wall = self.elapsed_s - elapsed
        return {"algorithm": settings.algorithm, "frames": self.frames - frames, "wall_time_s": wall}

    def _stage_progress(self) -> tuple[float, int]:
        """How far the current stage has come: the share of its frames done, and its updates done."""
        cfg = self.config
        start_update, start_frames, _ = self.stage_start
        end = min(self._next_stage_from() or cfg.total_frames, cfg.total_frames)
        done = (self.frames - start_frames) / max(1, end - start_frames)
        return min(1.0, done), self.update - start_update

    # --- the loop ----------------------------------------------------------------------------------
    def run(self, resume: bool, overwrite: bool = False) -> TrainResult:
        try:
            return self._run(resume, overwrite)
        finally:
            # Also when the run is refused before it starts: the scene pool's loader thread stops with it.
            self.sim.close()

    def _run(self, resume: bool, overwrite: bool) -> TrainResult:
        cfg, workers = self.config, self.workers
        if not resume:
            if ckpt.latest_checkpoint(self.run_dir) is not None:
                raise ConfigError(
                    "run_dir",
                    str(self.run_dir),
                    "a new folder, or pass --resume to continue the run saved there",
                )
            check_destination(self.run_dir, overwrite=overwrite)
        found, state, skipped = (resume and ckpt.load_latest(self.run_dir)) or (None, None, [])
        dist.barrier()  # every worker has looked at the folder before the main worker writes to it
        if workers.is_main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            if found is None:
                files = {CONFIG_FILE: yaml.safe_dump(cfg.to_dict(), sort_keys=False)}
                files.update(self.spec.files if self.spec is not None else {})
                for name, text in files.items():
                    (self.run_dir / name).write_text(text)
            else:
                ckpt.remove_stale_temporaries(self.run_dir)
                for reason in skipped:
                    print(f"skipped a damaged checkpoint: {reason}; resuming from {found.name}", flush=True)
            if absent := sorted(r for r in cfg.overridden_ranks() if r >= workers.world_size):
                # A preset made for several workers still runs on fewer, without those workers' scenes.
                print(
                    f"warning: rank_sim_overrides name worker ranks {absent} and this run has "
                    f"{workers.world_size} worker(s): their settings are not used; start it with torchrun "
                    f"--nproc-per-node {absent[-1] + 1} to train with them",
                    flush=True,
                )
        dist.barrier()
        observations = self._observe(self.sim.reset())
        storage = RolloutStorage(
            cfg.ppo.num_steps, observations, self.policy.initial_state(self.sim.num_envs)
        )
        if found is not None:
            self._restore(state, storage, found)
        elif cfg.init_from is not None:
            self._initialise_from(cfg.init_from)
        logger = TrainLogger(
            self.run_dir,
            cfg.total_frames,
            self.frames,
            enabled=workers.is_main,
            resumed=found is not None,
            wandb=cfg.wandb,
            config=cfg.to_dict(),
        )
        logger.event(
            event="resume" if found else "start",
            update=self.update,
            frames=self.frames,
            world_size=workers.world_size,
            restart=restart_count(),
        )
        previous_handlers = self._install_signal_handlers()
        hidden = storage.hidden.clone()
        metrics: dict[str, float] = {}
        try:
            for callback in self.callbacks:
                callback.on_train_start(self)
            while self.frames < cfg.total_frames and self.stop_reason is None:
                while (start := self._next_stage_from()) is not None and self.frames >= start:
                    self._start_next_stage(storage)
                    hidden = storage.hidden.clone()  # fresh where the stage restarted the environments
                started = time.perf_counter()
                hidden, rollout = self._collect(storage, hidden)
                learn_start = time.perf_counter()
                lr = self.ppo.set_progress(*self._stage_progress())
                losses = self.ppo.update(storage)
                storage.after_update(hidden)
                learning_s = time.perf_counter() - learn_start
                metrics = self._end_update(rollout, losses, learning_s, started, lr)
                if self.update % cfg.log_every == 0 or self.frames >= cfg.total_frames:
                    logger.log(self.frames, metrics)
                logger.advance(self.frames)
                for callback in self.callbacks:
                    callback.on_update_end(self, metrics)
                finished = self.frames >= cfg.total_frames or self.stop_reason is not None
                if finished or self.update % cfg.checkpoint_every == 0:
                    path = self._checkpoint(storage, metrics)
                    logger.event(event="checkpoint", update=self.update, frames=self.frames, path=path)
                    for callback in self.callbacks:
                        callback.on_checkpoint(self, path)
        finally:
            for signum, handler in previous_handlers.items():
                signal.signal(signum, handler)
            logger.close()
        if workers.is_main:
            task_metrics = get_task(cfg.sim.task).metrics
            plot_learning_curve(self.run_dir, tuple(f"episode/{name}" for name, _ in task_metrics))
            if self.stop_reason == "SIGUSR1":
                _requeue_slurm_job()
        result = TrainResult(self.run_dir, self.update, self.frames, self.stop_reason, metrics)
        for callback in self.callbacks:
            callback.on_train_end(self, result)
        return result

    def _collect(self, storage: RolloutStorage, hidden: torch.Tensor):
        """One rollout; returns the recurrent state after it and this worker's sums of statistics."""
        cfg = self.config
        self.preemption.begin(self.update)
        metric_names = self._metric_names()
        sums = dict.fromkeys(("episodes", *metric_names), 0.0)
        sim_s = inference_s = teacher_s = 0.0
        for step in range(cfg.ppo.num_steps):
            if self.preemption.should_stop(step):
                break
            t0 = time.perf_counter()
            observations, prev_actions, masks = storage.current()
            with torch.no_grad(), self.ppo.autocast():
                act = self.policy.act(observations, hidden, prev_actions, masks)
            actions, labels, bearings, head_targets = act.action, None, None, None
            t_teacher = self._sync_time()
            if self.teacher is not None:
                actions, labels, bearings = self.teacher.drive(
                    self.sim_observations, masks, act.action, self.frames
                )
                head_targets = self.teacher.head_targets(self.sim_observations)
            t1 = self._sync_time()
            next_observations, rewards, dones, info = self.sim.step(actions)
            next_observations = self._observe(next_observations)
            t2 = self._sync_time()
            storage.insert(
                actions,
                act.log_prob,
                act.value.float(),
                rewards,
                next_observations,
                dones,
                labels,
                bearings,
                head_targets,
            )
            hidden = act.hidden.float()
            episode = info.get("episode")
            if episode is not None:
                sums["episodes"] += float(dones.sum())
                for name in metric_names:
                    sums[name] += float(episode[name][dones].sum())
            inference_s += t_teacher - t0
            teacher_s += t1 - t_teacher
            sim_s += t2 - t1
        else:
            self.preemption.finished()
        t0 = time.perf_counter()
        observations, prev_actions, masks = storage.current()
        with torch.no_grad(), self.ppo.autocast():
            bootstrap = self.policy(observations, hidden, prev_actions, masks).value.float()
        storage.compute_returns(bootstrap, cfg.ppo.gamma, cfg.ppo.tau)
        inference_s += self._sync_time() - t0
        steps = storage.length
        return hidden, {
            **sums,
            "steps": steps,
            "preempted": float(steps < cfg.ppo.num_steps),
            "sim_s": sim_s,
            "inference_s": inference_s,
            "teacher_s": teacher_s,
        }

    def _observe(self, observations: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The simulator's observations as the rollout stores them: without the teacher's own cameras, and
        with visual features for a frozen encoder. The teacher reads them as they came."""
        self.sim_observations = observations
        observations = {k: v for k, v in observations.items() if k not in self.teacher_only_sensors}
        if self.frozen_encoder is None:
            return observations
        visual = self.frozen_encoder.visual_sensors
        with torch.no_grad():
            features = self.frozen_encoder({k: observations[k] for k in visual})
        rest = {k: v for k, v in observations.items() if k not in visual}
        return {**rest, VISUAL_FEATURES_KEY: features}

    # --- the end of an update: what the workers agree on, and the logged metrics ----------------------
    def _end_update(
        self, rollout: dict, losses: dict, learning_s: float, started: float, lr: float
    ) -> dict[str, float]:
        """Combine this update's statistics over all workers, learn whether any worker was asked to stop,
        count the update, and return its metrics."""
        totals = self._sum_over_workers(rollout, losses, learning_s)
        steps_min = all_reduce({"steps": rollout["steps"]}, self.device, op="min")["steps"]
        self.stop_reason = self._stop_requested_on_any_worker()
        self.update += 1
        frames = int(totals["rollout/frames"])
        self.frames += frames
        self.episodes += int(totals["rollout/episodes"])
        wall = time.perf_counter() - started
        self.elapsed_s += wall
        rollout_sums = {k.removeprefix("rollout/"): v for k, v in totals.items() if k.startswith("rollout/")}
        self.window.add(rollout_sums)
        return {**self.window.means(), **self._update_metrics(totals, steps_min, frames, wall, lr)}

    def _sum_over_workers(self, rollout: dict, losses: dict, learning_s: float) -> dict[str, float]:
        """Each worker's rollout sums, losses and times ("rollout/...", "loss/..."), summed over them all."""
        local = {f"rollout/{k}": v for k, v in rollout.items()}
        local.update({f"loss/{k}": v for k, v in losses.items()})
        local["rollout/learning_s"] = learning_s
        local["rollout/frames"] = rollout["steps"] * self.sim.num_envs
        return all_reduce(local, self.device)

    def _stop_requested_on_any_worker(self) -> str | None:
        """The name of the signal that asked any worker to stop (the same on every worker), or None.

        A signal reaches one worker (or not all at once); all of them must stop after the same update.
        """
        signum = all_reduce({"signal": float(self.stop_signal or 0)}, self.device, op="max")["signal"]
        return signal.Signals(int(signum)).name if signum else None

    def _update_metrics(
        self, totals: dict[str, float], steps_min: float, frames: int, wall: float, lr: float
    ) -> dict[str, float]:
        """Losses and times as means over the workers, the rollouts' lengths, and the training counters."""
        world = self.workers.world_size
        metrics = {k: v / world for k, v in totals.items() if k.startswith("loss/")}
        sim_s, inference_s = totals["rollout/sim_s"] / world, totals["rollout/inference_s"] / world
        teacher_s, learn_s = totals["rollout/teacher_s"] / world, totals["rollout/learning_s"] / world
        busy = sim_s + inference_s + teacher_s + learn_s
        metrics.update(
            {
                "perf/fps": frames / wall,
                "perf/sim_fraction": sim_s / busy,
                "perf/inference_fraction": inference_s / busy,
                **({"perf/teacher_fraction": teacher_s / busy} if self.teacher else {}),
                "perf/learning_fraction": learn_s / busy,
                "perf/update_s": wall,
                "rollout/steps_mean": totals["rollout/steps"] / world,
                "rollout/steps_min": steps_min,
                "rollout/preempted_workers": totals["rollout/preempted"],
                "train/lr": lr,
                **({"train/oracle_share": self.teacher.share(self.frames)} if self.teacher else {}),
                "train/update": self.update,
                "train/episodes": self.episodes,
            }
        )
        return metrics

    def _metric_names(self) -> tuple[str, ...]:
        return COMMON_METRICS + get_task(self.config.sim.task).training_metrics

    def _sync_time(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    # --- checkpoints ---------------------------------------------------------------------------------
    def _checkpoint(self, storage: RolloutStorage, metrics: dict[str, float]) -> str:
        """Gather every worker's state on the main worker, which writes the checkpoint and the model."""
        worker_state = {
            "sim": self.sim.state_dict(),
            "carry": storage.carry_state(),
            "rng": ckpt.rng_state(self.device),
            "teacher": self.teacher.state_dict() if self.teacher is not None else {},
        }
        gathered = [None] * self.workers.world_size if self.workers.is_main else None
        dist.gather_object(worker_state, gathered, dst=0)
        path = ckpt.checkpoint_path(self.run_dir, self.update)
        if self.workers.is_main:
            state = {
                "format": CHECKPOINT_FORMAT,
                "version": 1,
                "config": self.config.to_dict(),
                "model": self.policy.state_dict(),
                "ppo": self.ppo.state_dict(),
                "counters": {
                    "update": self.update,
                    "frames": self.frames,
                    "episodes": self.episodes,
                    "elapsed_s": self.elapsed_s,
                },
                "window": self.window.state(),
                "initialised_from": self.initialised_from,
                "stages": self.stages,
                "stage_start": list(self.stage_start),
                "world_size": self.workers.world_size,
                "workers": gathered,
            }
            ckpt.save_checkpoint(state, self.run_dir, self.update, self.config.keep_checkpoints)
            self._export_model(metrics)
        dist.barrier()  # nobody runs ahead of a checkpoint that a restart would go back to
        return str(path)

    def _restore(self, state: dict, storage: RolloutStorage, path: Path) -> None:
        if state.get("format") != CHECKPOINT_FORMAT:
            raise ckpt.CheckpointError(f"{path} is not a navzoo training checkpoint")
        if state["world_size"] != self.workers.world_size:
            raise ckpt.CheckpointError(
                f"{path} was written by {state['world_size']} workers and this run has "
                f"{self.workers.world_size}; resume with --nproc-per-node (and nodes) giving "
                f"{state['world_size']} workers, so every worker gets back its environments"
            )
        self._check_architecture(state, path)
        self.policy.load_state_dict(state["model"])
        counters = state["counters"]
        self.update, self.frames = counters["update"], counters["frames"]
        self.episodes, self.elapsed_s = counters["episodes"], counters["elapsed_s"]
        for _ in state.get("stages", []):  # saved in a later stage: continue with it
            self._start_next_stage(storage)
        if state.get("stages"):
            self.stages = state["stages"]
            self.stage_start = tuple(state["stage_start"])
        self.ppo.load_state_dict(state["ppo"])
        self.window.load_state(state["window"])
        self.initialised_from = state.get("initialised_from")
        mine = state["workers"][self.workers.rank]
        self.sim.load_state_dict(mine["sim"])
        to_device = {k: v.to(self.device) for k, v in mine["carry"].items()}
        storage.load_carry_state(to_device, self._observe(self.sim.observe()))
        if self.teacher is not None:
            self.teacher.load_state_dict(mine.get("teacher", {}))
        ckpt.set_rng_state(mine["rng"], self.device)

    def _initialise_from(self, source: str) -> None:
        """Load the weights of `source` (TrainConfig.init_from), which must have this run's architecture, or
        this run's without the seen_map sensor (the map's new inputs then start at zero)."""
        model = load(source)
        # A source without the map grows into this run's policy that reads it (add_seen_map).
        adds_seen_map = self.policy.config.has_seen_map and not model.config.has_seen_map
        expected = self.policy.config.without_seen_map() if adds_seen_map else self.policy.config
        if model.config != expected:
            mine, theirs = expected.to_dict(), model.config.to_dict()
            changed = [
                f"{k}: {theirs.get(k)!r} there, {v!r} here" for k, v in mine.items() if v != theirs.get(k)
            ]
            raise ConfigError(
                "init_from",
                source,
                f"a model of this run's architecture (or of this run's without {SEEN_MAP}); it differs in "
                f"{', '.join(changed)}. Set model, policy and sim (sensors, resolution) as that model was "
                "trained",
            )
        self.policy.load_state_dict(add_seen_map(model, self.policy) if adds_seen_map else model.state_dict())
        # What the weights had learnt before this run, for the model card: the recipe, stage by stage.
        before = model.provenance or {}
        config = before.get("train_config") or {}
        imitated = any(algorithm in TEACHER_ALGORITHMS for algorithm in recipe_algorithms(config))
        # The source's own training config and stages go along: a transfer from this run's model trains
        # with the hyper-parameters of the run that built it from scratch (navzoo.transfer.config).
        self.initialised_from = {
            "source": source,
            "algorithm": config.get("algorithm"),
            **({"teacher": (config.get("imitation") or {}).get("teacher")} if imitated else {}),
            "frames": before.get("frames"),
            "wall_time_s": before.get("wall_time_s"),
            **({"train_config": config} if config else {}),
            **({"stages": before["stages"]} if "stages" in before else {}),
            **({"added_inputs": [SEEN_MAP]} if adds_seen_map else {}),
            **({"initialised_from": before["initialised_from"]} if "initialised_from" in before else {}),
        }

    def _check_architecture(self, state: dict, path: Path) -> None:
        """CheckpointError naming the changed settings if the checkpoint's tensors do not fit the policy."""
        expected = self.policy.state_dict()
        saved = state["model"]
        if saved.keys() == expected.keys() and all(saved[k].shape == v.shape for k, v in expected.items()):
            return
        before, now = _flatten(state.get("config", {})), _flatten(self.config.to_dict())
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

    def _export_model(self, metrics: dict[str, float]) -> None:
        """config.json + model.safetensors at the top of the run folder, so navzoo.load(run_dir) works."""
        provenance = {
            "source": self.spec.source if self.spec is not None else "navzoo train",
            **(self.spec.provenance if self.spec is not None else {}),
            "run": self.run_dir.name,
            "train_config": self.config.to_dict(),
            "frames": self.frames,
            "updates": self.update,
            "wall_time_s": round(self.elapsed_s, 1),
            "workers": self.workers.world_size,
            "machine": _machine(self.device),
            **({"initialised_from": self.initialised_from} if self.initialised_from else {}),
            **({"stages": [*self.stages, self._current_stage()]} if self.stages else {}),
            "training_episodes": {
                k.removeprefix("episode/"): v for k, v in metrics.items() if k.startswith("episode/")
            },
        }
        staging = self.run_dir / ".export"
        shutil.rmtree(staging, ignore_errors=True)
        save_pretrained(self.policy, staging, name=self.run_dir.name, provenance=provenance)
        for item in staging.iterdir():
            os.replace(item, self.run_dir / item.name)
        staging.rmdir()

    # --- signals ------------------------------------------------------------------------------------
    def _install_signal_handlers(self) -> dict[int, Any]:
        """SIGTERM and SIGUSR1 ask for a checkpoint and a stop; returns the handlers they replace, for the
        end of the run: a process that goes on after train() must stop on SIGTERM again."""

        def stop(signum, _frame):
            self.stop_signal = signum

        return {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGUSR1)}


def _flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    """{"policy": {"hidden_size": 256}} -> {"policy.hidden_size": 256}."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _machine(device: torch.device) -> dict[str, str]:
    info = {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__}
    info["cpu_count"] = str(os.cpu_count())
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def _requeue_slurm_job() -> None:
    """Put this SLURM job back in the queue; its next start resumes from the checkpoint just written."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return
    try:
        subprocess.run(["scontrol", "requeue", job], check=True)
        print(f"requeued SLURM job {job}", flush=True)
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"could not requeue SLURM job {job} ({err}); resubmit it with --resume", flush=True)


def config_summary(config: TrainConfig) -> str:
    policy = config.policy_config()
    return (
        f"{config.model} ({policy.backbone or 'blind'}, {'+'.join(policy.sensors)}), {config.sim.task}, "
        f"{config.sim.num_envs} envs x {config.ppo.num_steps} steps per worker, "
        f"{config.total_frames:,} frames"
    )
