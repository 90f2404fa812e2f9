"""DD-PPO: every worker collects a rollout in its own batch of environments, then all of them take the same
PPO steps with gradients all-reduced by DistributedDataParallel (Wijmans et al. 2020). With
`algorithm: dagger` the same loop imitates a teacher instead (navzoo.train.imitation), and with
`algorithm: kickstart` it adds the teacher's cross-entropy to PPO's loss (navzoo.train.kickstart).

One update: collect up to `ppo.num_steps` steps (navzoo.train.collect), compute GAE, run the learner's
epochs, all-reduce the statistics (navzoo.train.update_metrics), log, and checkpoint at the interval. A run
may switch its learner, and its scenes, at the frames where its later stages begin (navzoo.train.stages).
SIGTERM (and SLURM's SIGUSR1, which also requeues the job) makes every worker finish the current update,
write a checkpoint and exit (navzoo.train.stop_signals). Callbacks (navzoo.train.callbacks) hook into the
run at its start, after every update and checkpoint, and at its end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from navzoo.errors import ConfigError
from navzoo.models import ActorCritic, ModelMetadata, PointNavPolicy
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.tasks import get_task
from navzoo.train import checkpoint as ckpt
from navzoo.train.callbacks import TrainerCallback, TrainResult
from navzoo.train.collect import RolloutCollector
from navzoo.train.config import TrainConfig
from navzoo.train.config_blocks import ImitationConfig, PPOConfig
from navzoo.train.distributed import RolloutPreemption, Workers, close_workers, init_workers, restart_count
from navzoo.train.episode_window import EpisodeWindow
from navzoo.train.imitation import DAgger, ImitationHeads, TeacherLabels
from navzoo.train.init_from import initialise_from
from navzoo.train.learners import make_learner
from navzoo.train.logger import TrainLogger, plot_learning_curve
from navzoo.train.machine import describe_machine
from navzoo.train.memory_check import refuse_unless_training_fits
from navzoo.train.model_export import export_model, training_episodes
from navzoo.train.ppo import PPO
from navzoo.train.rollout import RolloutStorage
from navzoo.train.run_folder import prepare_run_folder
from navzoo.train.run_lock import claimed_run_folder
from navzoo.train.run_state import (
    CHECKPOINT_FORMAT,
    check_resumable,
    check_same_teacher,
    restore_worker,
    worker_state,
)
from navzoo.train.stages import StageTracker
from navzoo.train.stop_signals import REQUEUE_SIGNAL, catch_stop_signals, requeue_slurm_job, restore_handlers
from navzoo.train.update_metrics import (
    episode_metric_names,
    fewest_steps,
    stop_requested_on_any_worker,
    sum_over_workers,
    update_metrics,
)


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
    (nothing of them is deleted); a folder with checkpoints is continued with `resume=True`. While another
    process trains in `run_dir`, FolderInUseError names it (navzoo.train.run_lock).
    """
    if spec is None and config.model is None:
        raise ConfigError("model", None, "a zoo architecture (only navzoo finetune builds its own policy)")
    workers = init_workers(config.distributed, config.worker_device())
    resume = resume or restart_count() > 0
    try:
        # Refused at once where another run writes: before the simulator is built or a file is touched.
        with claimed_run_folder(Path(run_dir), workers, resume, overwrite):
            # No name holds the trainer, so its DDP model (which holds the process group) is gone before the
            # group is destroyed; gloo's threads outliving it to interpreter shutdown can abort the process.
            return Trainer(config, Path(run_dir), workers, spec, callbacks).run(resume)
    finally:
        close_workers()


class Trainer:
    """One worker's side of a run; it is the TrainingRun its callbacks see."""

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
        refuse_unless_training_fits(config, workers, spec.policy if spec is not None else None)
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
        torch.manual_seed(config.seed * 1000 + workers.rank + 1)  # each worker's own action samples
        self.sim = BatchSim(self._sim_config(stage=0))
        self.frames_per_update = config.frames_per_update(workers.world_size)
        self.teacher = None
        if config.uses_teacher:
            self.teacher = TeacherLabels(self.sim, config.imitation, drives=config.algorithm == "dagger")
        # A policy teacher's name and provenance: how it was trained is part of how this model was.
        self.distilled_from = self.teacher.policy_record() if self.teacher is not None else None
        self.stages = StageTracker(config)
        self.learner = self._learner(config.algorithm, config.ppo, config.imitation)
        preemption = RolloutPreemption(
            workers.store, workers.world_size, config.distributed.sync_frac, config.ppo.num_steps
        )
        metric_names = episode_metric_names(config.sim.task)
        self.collector = RolloutCollector(
            self.policy, config.ppo, self.device, preemption, metric_names, config.teacher_only_sensors()
        )
        self.update = self.frames = self.episodes = 0
        self.initialised_from: dict[str, Any] | None = None  # init_from's provenance, kept in checkpoints
        self.elapsed_s = 0.0
        self.window = EpisodeWindow(metric_names)
        self.stop_signal: int | None = None  # set by a signal handler on this worker
        self.stop_reason: str | None = None  # set on every worker at once, from the all-reduced flag

    # --- the loop ----------------------------------------------------------------------------------
    def run(self, resume: bool) -> TrainResult:
        try:
            return self._run(resume)
        finally:
            # Also when the run is refused before it starts: the scene pool's loader thread stops with it.
            self.sim.close()

    def _run(self, resume: bool) -> TrainResult:
        cfg, workers = self.config, self.workers
        found, state, skipped = (resume and ckpt.load_latest(self.run_dir)) or (None, None, [])
        dist.barrier()  # every worker has looked at the folder before the main worker writes to it
        if workers.is_main:
            files = self.spec.files if self.spec is not None else {}
            prepare_run_folder(self.run_dir, cfg, files, found, skipped, workers.world_size)
        dist.barrier()
        observations = self.collector.observe(self.sim.reset())
        storage = RolloutStorage(
            cfg.ppo.num_steps, observations, self.policy.initial_state(self.sim.num_envs)
        )
        if found is not None:
            assert state is not None  # load_latest returns a checkpoint with its state
            self._restore(state, storage, found)
        elif cfg.init_from is not None:
            self.initialised_from = initialise_from(self.policy, cfg.init_from)
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
        previous_handlers = catch_stop_signals(self._stop)
        hidden = storage.hidden.clone()
        metrics: dict[str, float] = {}
        try:
            for callback in self.callbacks:
                callback.on_train_start(self)
            while self.frames < cfg.total_frames and self.stop_reason is None:
                while (start := self.stages.next_from()) is not None and self.frames >= start:
                    self._start_next_stage(storage)
                    hidden = storage.hidden.clone()  # fresh where the stage restarted the environments
                started = time.perf_counter()
                hidden, rollout = self.collector.collect(
                    self.sim, self.teacher, self.learner, storage, hidden, self.update, self.frames
                )
                learn_start = time.perf_counter()
                lr = self.learner.set_progress(*self.stages.progress(self.update, self.frames))
                losses = self.learner.update(storage)
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
            restore_handlers(previous_handlers)
            logger.close()
        if workers.is_main:
            task_metrics = get_task(cfg.sim.task).metrics
            plot_learning_curve(self.run_dir, tuple(f"episode/{name}" for name, _ in task_metrics))
            if self.stop_reason == REQUEUE_SIGNAL:
                requeue_slurm_job()
        result = TrainResult(self.run_dir, self.update, self.frames, self.stop_reason, metrics)
        for callback in self.callbacks:
            callback.on_train_end(self, result)
        return result

    def _end_update(
        self, rollout: dict, losses: dict, learning_s: float, started: float, lr: float
    ) -> dict[str, float]:
        """Combine this update's statistics over all workers, learn whether any worker was asked to stop,
        count the update, and return its metrics."""
        totals = sum_over_workers(rollout, losses, learning_s, self.sim.num_envs, self.device)
        steps_min = fewest_steps(rollout, self.device)
        self.stop_reason = stop_requested_on_any_worker(self.stop_signal, self.device)
        self.update += 1
        frames = int(totals["rollout/frames"])
        self.frames += frames
        self.episodes += int(totals["rollout/episodes"])
        wall = time.perf_counter() - started
        self.elapsed_s += wall
        rollout_sums = {k.removeprefix("rollout/"): v for k, v in totals.items() if k.startswith("rollout/")}
        self.window.add(rollout_sums)
        teacher_share = self.teacher.share(self.frames) if self.teacher else None
        world = self.workers.world_size
        counters = (world, teacher_share, self.update, self.episodes)
        return {**self.window.means(), **update_metrics(totals, steps_min, frames, wall, lr, *counters)}

    def _stop(self, signum: int) -> None:
        self.stop_signal = signum

    # --- stages ------------------------------------------------------------------------------------
    def _sim_config(self, stage: int) -> SimConfig:
        """This worker's simulator in stage `stage` of the run, on its device."""
        return self.config.sim_for_rank(self.workers.rank, stage).replace(device=str(self.device))

    def _learner(
        self, algorithm: str, ppo: PPOConfig, imitation: ImitationConfig, heads: ImitationHeads | None = None
    ) -> PPO:
        """A fresh learner of `algorithm` for this worker's policy (navzoo.train.learners)."""
        distributed = self.workers.distributed
        return make_learner(
            algorithm, self.policy, ppo, imitation, self.frames_per_update, self.device, distributed, heads
        )

    def _start_next_stage(self, storage: RolloutStorage) -> None:
        """Begin the run's next stage (config.stages) with a fresh optimiser: DD-PPO with no teacher from
        here on (PIRLNav), kickstarting, whose teacher labels and no longer drives, or more imitation, each
        with the stage's own `ppo` and `imitation` blocks, and in its own scene stream where it sets one."""
        settings = self.stages.advance(self.update, self.frames, self.elapsed_s)
        if (sim_config := self._sim_config(self.stages.index)) != self.sim.config:
            self._restart_environments(sim_config, storage)
        # DAgger's heads go on learning in a DAgger stage that follows one.
        heads = self.learner.heads if isinstance(self.learner, DAgger) else None
        if not settings.uses_teacher:
            self.teacher = None
        else:
            # check_stages: once a stage has let the teacher go, no later stage has it back.
            assert self.teacher is not None
            self.teacher.config = settings.imitation
            self.teacher.drives = settings.algorithm == "dagger"  # PPO learns from the learner's own actions
        self.learner = self._learner(settings.algorithm, settings.ppo, settings.imitation, heads)

    def _restart_environments(self, sim_config: SimConfig, storage: RolloutStorage) -> None:
        """Move this worker to a new simulator: every environment starts a new episode in it, with a fresh
        recurrent state and, under a teacher, a fresh teacher's memory, as at the start of a run."""
        self.sim.close()
        self.sim = BatchSim(sim_config)
        if self.teacher is not None:
            config, drives = self.teacher.config, self.teacher.drives
            self.teacher = None  # let the old teacher go before the new one loads (memory_check counts one)
            self.teacher = TeacherLabels(self.sim, config, drives)
        observations = self.collector.observe(self.sim.reset())
        storage.restart(observations, self.policy.initial_state(self.sim.num_envs))

    # --- checkpoints ---------------------------------------------------------------------------------
    def _checkpoint(self, storage: RolloutStorage, metrics: dict[str, float]) -> str:
        """Gather every worker's state on the main worker, which writes the checkpoint and the model."""
        mine = worker_state(self.sim, storage, self.teacher, self.device)
        gathered: list[dict[str, Any] | None] | None = None  # the main worker's, one item per worker
        if self.workers.is_main:
            gathered = [None for _ in range(self.workers.world_size)]
        dist.gather_object(mine, gathered, dst=0)
        path = ckpt.checkpoint_path(self.run_dir, self.update)
        if self.workers.is_main:
            state = {
                "format": CHECKPOINT_FORMAT,
                "version": 1,
                "config": self.config.to_dict(),
                "model": self.policy.state_dict(),
                "ppo": self.learner.state_dict(),  # the learner's, whatever its algorithm
                "counters": {
                    "update": self.update,
                    "frames": self.frames,
                    "episodes": self.episodes,
                    "elapsed_s": self.elapsed_s,
                },
                "window": self.window.state(),
                "initialised_from": self.initialised_from,
                "distilled_from": self.distilled_from,
                "stages": self.stages.finished,
                "stage_start": list(self.stages.start),
                "world_size": self.workers.world_size,
                "workers": gathered,
            }
            ckpt.save_checkpoint(state, self.run_dir, self.update, self.config.keep_checkpoints)
            export_model(self.policy, self.run_dir, self._provenance(metrics))
        dist.barrier()  # nobody runs ahead of a checkpoint that a restart would go back to
        return str(path)

    def _restore(self, state: dict, storage: RolloutStorage, path: Path) -> None:
        check_resumable(state, path, self.workers.world_size, self.policy, self.config)
        check_same_teacher(state.get("distilled_from"), self.distilled_from, path)
        self.policy.load_state_dict(state["model"])
        counters = state["counters"]
        self.update, self.frames = counters["update"], counters["frames"]
        self.episodes, self.elapsed_s = counters["episodes"], counters["elapsed_s"]
        for _ in state.get("stages", []):  # saved in a later stage: continue with it
            self._start_next_stage(storage)
        if state.get("stages"):
            self.stages.finished = state["stages"]
            self.stages.start = tuple(state["stage_start"])
        self.learner.load_state_dict(state["ppo"])
        self.window.load_state(state["window"])
        self.initialised_from = state.get("initialised_from")
        mine = state["workers"][self.workers.rank]
        restore_worker(mine, self.sim, storage, self.teacher, self.device, self.collector.observe)

    def _provenance(self, metrics: dict[str, float]) -> dict[str, Any]:
        """What the exported model records of how it was trained."""
        return {
            "source": self.spec.source if self.spec is not None else "navzoo train",
            **(self.spec.provenance if self.spec is not None else {}),
            "run": self.run_dir.name,
            "train_config": self.config.to_dict(),
            "frames": self.frames,
            "updates": self.update,
            "wall_time_s": round(self.elapsed_s, 1),
            "workers": self.workers.world_size,
            "machine": describe_machine(self.device),
            **({"initialised_from": self.initialised_from} if self.initialised_from else {}),
            **({"distilled_from": self.distilled_from} if self.distilled_from else {}),
            **({"stages": self.stages.records(self.frames, self.elapsed_s)} if self.stages.finished else {}),
            "training_episodes": training_episodes(metrics),
        }
