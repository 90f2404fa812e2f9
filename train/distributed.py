"""Workers and their synchronisation: the process group, all-reduced statistics, rollout preemption.

Every worker runs the same code. Under torchrun (single- or multi-node) the process group comes from the
environment torchrun sets (RANK, WORLD_SIZE, MASTER_ADDR, ...), under `srun` from SLURM's; run directly,
the process is a group of one, so the trainer has a single code path.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

# torch documents the stores as torch.distributed.TCPStore and HashStore, but re-exports them from torch._C
# there without listing them in __all__; distributed_c10d lists Store and PrefixStore.
from torch.distributed import HashStore, TCPStore  # pyright: ignore[reportPrivateImportUsage]
from torch.distributed.distributed_c10d import PrefixStore, Store

from navzoo.errors import ConfigError
from navzoo.train.config_blocks import DistributedConfig


@dataclass
class Workers:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    device: torch.device
    store: Store  # key-value store shared by all workers (rollout preemption counts)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def restart_count() -> int:
    """How many times torchrun has restarted the workers (0 outside torchrun)."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def init_workers(config: DistributedConfig, device: str = "auto") -> Workers:
    _adopt_slurm_environment()
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    worker_device = _worker_device(device, local_rank)
    backend = config.backend
    if backend == "auto":
        backend = "nccl" if worker_device.type == "cuda" else "gloo"
    if backend == "nccl" and worker_device.type != "cuda":
        raise ConfigError("distributed.backend", "nccl", "'gloo' or 'auto' when training on CPU")
    if backend == "nccl" and local_world_size > torch.cuda.device_count():
        raise ConfigError(
            "distributed.backend",
            "nccl",
            f"'gloo' when {local_world_size} workers share {torch.cuda.device_count()} GPU(s) on a node "
            "(NCCL needs one GPU per worker), or start at most one worker per GPU",
        )
    timeout = datetime.timedelta(seconds=config.timeout_s)
    if not dist.is_initialized():
        if world_size > 1:
            store = _restart_scoped_store(world_size, timeout)
            dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
        else:
            dist.init_process_group("gloo", store=HashStore(), rank=0, world_size=1, timeout=timeout)
    store = _preemption_store(rank, world_size, timeout)
    return Workers(rank, world_size, local_rank, local_world_size, worker_device, store)


def _restart_scoped_store(world_size: int, timeout: datetime.timedelta) -> Store:
    """The process group's store, with this restart attempt's keys kept apart from earlier attempts'.

    torchrun lends its workers the rendezvous TCPStore and keeps it across restarts with the old
    attempt's keys in it, so restarted gloo workers could read a dead worker's address (pytorch#135712).
    Outside torchrun the usual env:// store is fine.
    """
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return TCPStore(
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            world_size,
            is_master=int(os.environ.get("RANK", "0")) == 0,
            timeout=timeout,
        )
    agent = TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        world_size,
        is_master=False,
        timeout=timeout,
    )
    return PrefixStore(f"navzoo/attempt-{restart_count()}/", agent)


def _adopt_slurm_environment() -> None:
    """Workers started by `srun` (one task per GPU) read their rank from SLURM's variables.

    Only when the job script has exported MASTER_ADDR and MASTER_PORT (see train/slurm/train.sbatch) and
    torchrun has not set RANK: a single `python -m navzoo train` inside an allocation stays one worker.
    """
    if "RANK" in os.environ or "MASTER_ADDR" not in os.environ or "SLURM_PROCID" not in os.environ:
        return
    os.environ["RANK"] = os.environ["SLURM_PROCID"]
    os.environ["WORLD_SIZE"] = os.environ.get("SLURM_NTASKS", "1")
    os.environ["LOCAL_RANK"] = os.environ.get("SLURM_LOCALID", "0")
    os.environ["LOCAL_WORLD_SIZE"] = os.environ.get("SLURM_NTASKS_PER_NODE", "1").split("(")[0]


def close_workers() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def _worker_device(device: str, local_rank: int) -> torch.device:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("device", device, "'cpu' or 'auto' (no CUDA device on this machine)")
        device = f"cuda:{local_rank % torch.cuda.device_count()}"
    result = torch.device(device)
    if result.type == "cuda":
        torch.cuda.set_device(result)
    return result


def _preemption_store(rank: int, world_size: int, timeout: datetime.timedelta) -> Store:
    """A TCPStore hosted by rank 0 on a free port (announced through the process group), as in DD-PPO."""
    if world_size == 1:
        return HashStore()
    host = os.environ.get("MASTER_ADDR", "127.0.0.1")
    announce: list[int | None] = [None]  # rank 0's port, sent to the others
    if rank == 0:
        store = TCPStore(host, 0, world_size, is_master=True, timeout=timeout, wait_for_workers=False)
        announce = [store.port]
    dist.broadcast_object_list(announce, src=0)
    if rank != 0:
        port = announce[0]
        assert port is not None  # rank 0 broadcast its store's port
        store = TCPStore(host, port, world_size, is_master=False, timeout=timeout)
    return store


REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}


def all_reduce(values: dict[str, float], device: torch.device, op: str = "sum") -> dict[str, float]:
    """Sum (or min, or max) a dict of numbers over all workers; every worker must pass the same keys."""
    if not values:
        return {}
    keys = sorted(values)
    tensor = torch.tensor([float(values[k]) for k in keys], dtype=torch.float64, device=device)
    if dist.get_world_size() > 1:
        dist.all_reduce(tensor, op=REDUCE_OPS[op])
    return dict(zip(keys, tensor.tolist(), strict=True))


class RolloutPreemption:
    """DD-PPO's straggler preemption: a worker stops its rollout early once at least `sync_frac` of all
    workers have finished theirs, but never before a quarter of the rollout is collected."""

    def __init__(self, store: Store, world_size: int, sync_frac: float, num_steps: int):
        self.store, self.world_size = store, world_size
        self.needed = sync_frac * world_size
        self.min_steps = max(1, num_steps // 4)
        self.enabled = world_size > 1 and sync_frac < 1.0
        self.key = ""

    def begin(self, update: int) -> None:
        # One counter per update (and per launch of the store), so nothing has to be reset between them.
        self.key = f"rollouts_done/{update}"

    def finished(self) -> None:
        if self.enabled:
            self.store.add(self.key, 1)

    def should_stop(self, step: int) -> bool:
        if not self.enabled or step < self.min_steps:
            return False
        return self.store.add(self.key, 0) >= self.needed
