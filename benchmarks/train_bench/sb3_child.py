"""sb3-contrib's RecurrentPPO on a preset's simulator with navzoo's network, timed per iteration (the sb3
section's child process; it needs the bench extra: pip install -e '.[bench]')."""

from __future__ import annotations

import resource
import statistics
import time

import numpy as np
import sb3_contrib
import stable_baselines3
import torch
from sb3_contrib import RecurrentPPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper

from navzoo.interop.gym_env import NavEnv
from navzoo.interop.sb3 import NavVecEnv, NavzooFeaturesExtractor
from navzoo.models.configuration import GOAL_SENSOR
from navzoo.train.config import load_config


class NavzooFeatures(NavzooFeaturesExtractor):
    """navzoo's features extractor, counting the frames it encodes with gradients (PPO's passes, padding
    included)."""

    def __init__(self, observation_space, policy_config, seed: int):
        super().__init__(observation_space, policy_config, seed)
        self.grad_frames = 0

    def forward(self, observations):
        if torch.is_grad_enabled():
            self.grad_frames += observations[GOAL_SENSOR].shape[0]
        return super().forward(observations)


class TimedEnv(VecEnvWrapper):
    """Accumulates the seconds spent inside the environments' step."""

    def __init__(self, venv, device: str):
        super().__init__(venv)
        self.sync_cuda = device == "cuda"
        self.sim_s = 0.0

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        started = time.perf_counter()
        out = self.venv.step_wait()
        if self.sync_cuda:
            torch.cuda.synchronize()
        self.sim_s += time.perf_counter() - started
        return out


class Timer(BaseCallback):
    """Marks the start and end of every rollout: wall time, simulator time, encoded frames, episodes."""

    def __init__(self, env: TimedEnv, device: str):
        super().__init__()
        self.env, self.sync_cuda, self.marks = env, device == "cuda", []
        self.episodes = 0

    def _mark(self, kind: str) -> None:
        if self.sync_cuda:
            torch.cuda.synchronize()
        encoded = self.model.policy.features_extractor.grad_frames
        self.marks.append((kind, time.perf_counter(), self.env.sim_s, encoded, self.episodes))

    def _on_rollout_start(self) -> None:
        self._mark("start")

    def _on_rollout_end(self) -> None:
        self._mark("end")

    def _on_training_end(self) -> None:
        self._mark("start")  # the end of the last iteration's training

    def _on_step(self) -> bool:
        self.episodes += int(np.sum(self.locals["dones"]))
        return True


def measure(spec: dict) -> dict:
    """RecurrentPPO on the preset's simulator with navzoo's network; per-iteration timings."""
    torch.set_num_threads(spec["threads"])
    device = spec["device"]
    config = load_config(spec["preset"], [*spec["overrides"], f"device={device}"])
    policy_config = config.policy_config()
    ppo = config.ppo
    sim_config = config.sim_for_rank(0).replace(device=device)
    n = sim_config.num_envs

    if spec["env"] == "vector":
        base_env = NavVecEnv(sim_config)
    else:
        makers = [(lambda i=i: NavEnv(sim_config.replace(seed=sim_config.seed * 1000 + i))) for i in range(n)]
        base_env = DummyVecEnv(makers)
    env = TimedEnv(base_env, device)
    torch.manual_seed(config.seed)
    model = RecurrentPPO(
        "MultiInputLstmPolicy",
        env,
        n_steps=ppo.num_steps,
        batch_size=ppo.num_steps * n // ppo.num_mini_batch,
        n_epochs=ppo.ppo_epoch,
        learning_rate=ppo.lr,
        gamma=ppo.gamma,
        gae_lambda=ppo.tau,
        clip_range=ppo.clip_param,
        ent_coef=ppo.entropy_coef,
        vf_coef=ppo.value_loss_coef,
        max_grad_norm=ppo.max_grad_norm,
        normalize_advantage=ppo.use_normalized_advantage,
        policy_kwargs={
            "features_extractor_class": NavzooFeatures,
            "features_extractor_kwargs": {"policy_config": policy_config, "seed": config.seed},
            "lstm_hidden_size": policy_config.hidden_size,
            "n_lstm_layers": policy_config.num_recurrent_layers,
            "shared_lstm": True,  # one LSTM for actor and critic, as navzoo's policy
            "enable_critic_lstm": False,
            "net_arch": [],  # linear action and value heads on the LSTM output
            "ortho_init": False,  # keep the encoder's own initialisation (Fixup for SE-ResNet9)
        },
        device=device,
        seed=config.seed,
        verbose=0,
    )
    params = sum(p.numel() for p in model.policy.parameters())
    timer = Timer(env, device)
    iterations = spec["warmup"] + spec["updates"]
    model.learn(total_timesteps=iterations * ppo.num_steps * n, callback=timer)
    env.close()
    starts = [m for m in timer.marks if m[0] == "start"]
    ends = [m for m in timer.marks if m[0] == "end"]
    per = []
    frames = ppo.num_steps * n
    for i in range(spec["warmup"], len(ends)):
        start, end, nxt = starts[i], ends[i], starts[i + 1]
        wall = nxt[1] - start[1]
        sim = end[2] - start[2]
        rollout = end[1] - start[1]
        per.append({"fps": frames / wall, "wall": wall, "sim": sim, "inference": rollout - sim})
        per[-1]["learning"] = wall - rollout
        per[-1]["padding"] = (nxt[3] - end[3]) / (frames * ppo.ppo_epoch)
        per[-1]["episodes"] = end[4] - start[4]
    return {
        "updates": len(per),
        "fps": statistics.median(p["fps"] for p in per),
        "fps_total": frames * len(per) / sum(p["wall"] for p in per),
        "fps_per_update": [p["fps"] for p in per],
        "sim_fraction": statistics.median(p["sim"] / p["wall"] for p in per),
        "inference_fraction": statistics.median(p["inference"] / p["wall"] for p in per),
        "learning_fraction": statistics.median(p["learning"] / p["wall"] for p in per),
        "update_s": statistics.median(p["wall"] for p in per),
        "frames_per_update": frames,
        "episodes_per_update": statistics.median(p["episodes"] for p in per),
        # frames RecurrentPPO's encoder runs with gradients per rollout frame and epoch (its padding of
        # episode fragments to the longest one in the mini-batch); navzoo's is 1
        "train_padding": statistics.median(p["padding"] for p in per),
        "params": params,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sb3_versions": {
            "stable-baselines3": stable_baselines3.__version__,
            "sb3-contrib": sb3_contrib.__version__,
        },
    }
