"""Collecting one worker's rollout: the policy acts in every environment of its simulator for up to
`ppo.num_steps` steps (stopping early once enough workers are done, see RolloutPreemption), a teacher labels
each step and, under DAgger, drives its share of them, and the rollout storage gets the steps, their
returns and this worker's sums of episode metrics and times."""

from __future__ import annotations

import time

import torch

from navzoo.models import VISUAL_FEATURES_KEY, ActorCritic
from navzoo.sim.batch_sim import BatchSim
from navzoo.train.config_blocks import PPOConfig
from navzoo.train.distributed import RolloutPreemption
from navzoo.train.imitation import TeacherLabels
from navzoo.train.ppo import PPO
from navzoo.train.rollout import RolloutStorage


class RolloutCollector:
    def __init__(
        self,
        policy: ActorCritic,
        ppo: PPOConfig,
        device: torch.device,
        preemption: RolloutPreemption,
        metric_names: tuple[str, ...],
        teacher_only_sensors: tuple[str, ...],
    ):
        """`ppo`: the run's block (its rollout length and returns hold in every stage); `metric_names`: the
        episode metrics summed over the episodes that end; `teacher_only_sensors`: cameras the simulator
        renders for the teacher alone, not stored."""
        self.policy, self.ppo, self.device = policy, ppo, device
        self.preemption = preemption
        self.metric_names = metric_names
        self.teacher_only_sensors = teacher_only_sensors
        encoder = policy.visual_encoder
        # A frozen encoder's features never change, so the rollout stores them instead of the images and
        # the PPO epochs skip the encoder.
        self.frozen_encoder = encoder if encoder is not None and encoder.frozen else None
        self.sim_observations: dict[str, torch.Tensor] = {}  # the simulator's latest, for the teacher

    def collect(
        self,
        sim: BatchSim,
        teacher: TeacherLabels | None,
        learner: PPO,
        storage: RolloutStorage,
        hidden: torch.Tensor,
        update: int,
        frames: int,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """One rollout; returns the recurrent state after it and this worker's sums of statistics."""
        self.preemption.begin(update)
        sums = dict.fromkeys(("episodes", *self.metric_names), 0.0)
        sim_s = inference_s = teacher_s = 0.0
        for step in range(self.ppo.num_steps):
            if self.preemption.should_stop(step):
                break
            t0 = time.perf_counter()
            observations, prev_actions, masks = storage.current()
            with torch.no_grad(), learner.autocast():
                act = self.policy.act(observations, hidden, prev_actions, masks)
            actions, labels, bearings, head_targets = act.action, None, None, None
            t_teacher = self._sync_time()
            if teacher is not None:
                actions, labels, bearings = teacher.drive(self.sim_observations, masks, act.action, frames)
                head_targets = teacher.head_targets(self.sim_observations)
            t1 = self._sync_time()
            next_observations, rewards, dones, info = sim.step(actions)
            next_observations = self.observe(next_observations)
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
                for name in self.metric_names:
                    sums[name] += float(episode[name][dones].sum())
            inference_s += t_teacher - t0
            teacher_s += t1 - t_teacher
            sim_s += t2 - t1
        else:
            self.preemption.finished()
        t0 = time.perf_counter()
        observations, prev_actions, masks = storage.current()
        with torch.no_grad(), learner.autocast():
            bootstrap = self.policy(observations, hidden, prev_actions, masks).value.float()
        storage.compute_returns(bootstrap, self.ppo.gamma, self.ppo.tau)
        inference_s += self._sync_time() - t0
        steps = storage.length
        return hidden, {
            **sums,
            "steps": steps,
            "preempted": float(steps < self.ppo.num_steps),
            "sim_s": sim_s,
            "inference_s": inference_s,
            "teacher_s": teacher_s,
        }

    def observe(self, observations: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
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

    def _sync_time(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()
