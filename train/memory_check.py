"""Whether one worker of a training run fits in memory, checked before it allocates anything large.

A worker holds its simulator (navzoo.sim.memory_estimate; the largest of its stages' simulators, which
replace each other), its rollout storage (navzoo.train.rollout), its policy with gradients and optimizer
state (navzoo.models.model_memory), and a map-planner teacher's own maps or a policy teacher's weights and
recurrent state. The workers of one machine share its RAM, so on the CPU each gets its share. What the
estimate leaves out, and the margin kept for it, are in navzoo.memory.
"""

from __future__ import annotations

import math

import torch

from navzoo.memory import Part, refuse_unless_fits
from navzoo.models import ActorCritic, ModelSize, model_size
from navzoo.models.model_memory import measure, parameters_part
from navzoo.models.weights import ModelConfig
from navzoo.names import SEEN_MAP
from navzoo.sim.config import ACTION_NAMES, SimConfig
from navzoo.sim.memory_estimate import memory_estimate, observation_bytes, seen_map_part
from navzoo.train.config import TrainConfig
from navzoo.train.distributed import Workers
from navzoo.train.imitation import DEPTH_TARGET_SIZE, MAP_TARGET_SIZE
from navzoo.train.rollout import storage_bytes
from navzoo.train.teacher import policy_teacher_config

# Copies of each trainable parameter: the weights, their gradients, and Adam's (or Lamb's) two moments.
TRAINING_COPIES = 4
# With more than one worker, DistributedDataParallel keeps the gradients once more, in its buckets.
DDP_COPIES = 1


def training_memory_estimate(
    config: TrainConfig, rank: int, world_size: int, policy: ActorCritic | None = None
) -> list[Part]:
    """Worker `rank`'s big buffers; `policy` is one built by the caller (PolicySpec), else the config's
    architecture is measured on the meta device."""
    sims = [config.sim_for_rank(rank, stage) for stage in range(len(config.stages) + 1)]
    sim_parts = max((memory_estimate(sim, None, "sim.") for sim in sims), key=_total)
    first = sims[0]
    model_config: ModelConfig
    if policy is None:
        model_config = config.policy_config()
        size = model_size(model_config)
    else:
        model_config, size = policy.config, measure(policy, policy.hidden_state_shape)
    copies = TRAINING_COPIES + (DDP_COPIES if world_size > 1 else 0)
    parts = [
        *sim_parts,
        _rollout_part(config, first, size),
        parameters_part(size, model_config, copies, prefix="policy."),
    ]
    if config.uses_teacher and config.imitation.teacher == "map-planner" and SEEN_MAP not in first.sensors:
        parts.append(seen_map_part(first, "for the map-planner teacher's maps", "sim.", sensor=False))
    if config.uses_teacher and config.imitation.teacher_model is not None:
        parts.append(_policy_teacher_part(config.imitation.teacher_model, first.num_envs))
    return parts


def refuse_unless_training_fits(config: TrainConfig, workers: Workers, policy: ActorCritic | None) -> None:
    """ConfigTooLargeError, naming the fields that drive the estimate, where this worker cannot fit."""
    device = str(workers.device)
    # A machine's CPU workers share its RAM; several workers may share one GPU too (local_rank % devices).
    if workers.device.type == "cpu":
        sharers = workers.local_world_size
    else:
        sharers = math.ceil(workers.local_world_size / max(torch.cuda.device_count(), 1))
    parts = training_memory_estimate(config, workers.rank, workers.world_size, policy)
    refuse_unless_fits(parts, device, sharers)


def _rollout_part(config: TrainConfig, sim: SimConfig, size: ModelSize) -> Part:
    """The rollout storage of the first stage's simulator `sim`, which later stages reuse: its observations
    but the teacher's own cameras, and the targets of the imitation heads any DAgger stage trains."""
    stored = {k: v for k, v in observation_bytes(sim).items() if k not in config.teacher_only_sensors()}
    dagger = [stage for _, stage in config.stage_settings() if stage.algorithm == "dagger"]
    heads = 0
    if any(stage.imitation.depth_weight > 0 for stage in dagger):
        heads += DEPTH_TARGET_SIZE**2 * 4
    if any(stage.imitation.map_weight > 0 for stage in dagger):
        heads += MAP_TARGET_SIZE**2 * 4
    if config.uses_teacher and config.imitation.teacher == "policy":
        heads += len(ACTION_NAMES) * 4  # its action distribution
    steps = config.ppo.num_steps
    nbytes = storage_bytes(steps, sim.num_envs, sum(stored.values()), heads, size.hidden_bytes)
    fields = (("sim.num_envs", sim.num_envs), ("ppo.num_steps", steps))
    return Part(f"of rollout storage (ppo.num_steps={steps})", nbytes, fields)


def _policy_teacher_part(model: str, num_envs: int) -> Part:
    """The policy teacher's weights, which it only runs, and its recurrent state in each environment."""
    size = model_size(policy_teacher_config(model))
    nbytes = size.parameter_bytes + size.buffer_bytes + num_envs * size.hidden_bytes
    return Part(f"for the policy teacher {model}", nbytes, (("imitation.teacher_model", model),))


def _total(parts: list[Part]) -> int:
    return sum(part.nbytes for part in parts)
