"""Memory is estimated before allocating: a config whose buffers cannot fit in the memory there is (free RAM,
or what RLIMIT_AS leaves) is refused up front with a ConfigError naming the fields that drive the estimate,
at BatchSim construction, at the start of training and when a model is built from a config; the shipped
presets fit."""

import math
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import navzoo
from navzoo import memory
from navzoo.errors import ConfigTooLargeError
from navzoo.memory import SAFETY_FRACTION, available_memory, refuse_unless_fits
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.train.config import load_config
from navzoo.train.memory_check import training_memory_estimate
from navzoo.train.rollout import RolloutStorage, storage_bytes
from navzoo.train.trainer import train
from tests.support import distilling

PRESETS = sorted(p.stem for p in (Path(navzoo.train.__file__).parent / "presets").glob("*.yaml"))
HUGE_MODEL = ["policy.hidden_size=16384", "policy.num_recurrent_layers=16", "policy.rnn_type=GRU"]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("preset", PRESETS)
def test_shipped_presets_fit(preset):
    parts = training_memory_estimate(load_config(preset), rank=0, world_size=1)
    assert sum(part.nbytes for part in parts) < 1e9  # each is well under a gigabyte
    refuse_unless_fits(parts)


def test_a_policy_teacher_counts_with_its_weights_and_memory():
    config = load_config("navzoo-pointnav-depth-il", distilling("navzoo-pointnav-depth"))
    parts = training_memory_estimate(config, rank=0, world_size=1)
    [part] = [
        part for part in parts if part.fields == (("imitation.teacher_model", "navzoo-pointnav-depth"),)
    ]
    teacher = navzoo.load("navzoo-pointnav-depth")
    weights = sum(t.numel() * t.element_size() for t in [*teacher.parameters(), *teacher.buffers()])
    memory = config.sim.num_envs * math.prod(teacher.hidden_state_shape) * 4
    assert part.nbytes == weights + memory


def test_a_million_environments_are_refused_by_the_simulator_before_allocating():
    before, started = _peak_rss_mb(), time.perf_counter()
    with pytest.raises(ConfigTooLargeError) as info:
        BatchSim(SimConfig(num_envs=1_000_000))  # depth 256x256
    assert time.perf_counter() - started < 5 and _peak_rss_mb() - before < 300
    assert info.value.field == "num_envs" and info.value.value == 1_000_000
    message = str(info.value)
    assert message.startswith("num_envs=1000000 needs about 262 GB (262 GB for depth 256x256 observations")
    assert "are available (free RAM, MemAvailable)" in message and message.endswith(
        ": lower num_envs or resolution"
    )


def test_a_million_environments_are_refused_at_the_start_of_training(tmp_path):
    config = load_config("navzoo-pointnav-depth-il", ["sim.num_envs=1000000"])
    before = _peak_rss_mb()
    with pytest.raises(ConfigTooLargeError) as info:
        train(config, tmp_path / "run")
    assert _peak_rss_mb() - before < 300
    assert info.value.field == "sim.num_envs"
    message = str(info.value)
    assert message.startswith(
        "sim.num_envs=1000000 needs about 1.1 TB (1.1 TB of rollout storage (ppo.num_steps=64)"
    )
    assert message.endswith(": lower sim.num_envs, ppo.num_steps or sim.resolution")


def test_a_huge_model_is_refused_naming_its_fields():
    before = _peak_rss_mb()
    with pytest.raises(ConfigTooLargeError) as info:
        navzoo.create_model("pointnav-blind", hidden_size=16384, num_recurrent_layers=16, rnn_type="GRU")
    assert _peak_rss_mb() - before < 300
    assert info.value.field == "hidden_size"
    assert "needs about 100 GB (100 GB for 25 billion parameters)" in str(info.value)
    assert str(info.value).endswith(": lower hidden_size or num_recurrent_layers")

    parts = training_memory_estimate(load_config("navzoo-pointnav-blind", HUGE_MODEL), rank=0, world_size=1)
    with pytest.raises(ConfigTooLargeError, match=r"^policy.hidden_size=16384 needs about 400 GB") as info:
        refuse_unless_fits(parts)
    assert "with their gradients and optimizer state" in str(info.value)
    assert str(info.value).endswith(": lower policy.hidden_size or policy.num_recurrent_layers")


def test_the_rollout_estimate_is_what_rollout_storage_allocates():
    import torch

    observations = {"depth": torch.zeros(3, 8, 8, 1), "pointgoal_with_gps_compass": torch.zeros(3, 2)}
    storage = RolloutStorage(5, observations, torch.zeros(3, 2, 16))
    tensors = [*storage.observations.values(), storage.hidden, storage.prev_actions, storage.masks]
    tensors += [storage.actions, storage.teacher_actions, storage.teacher_bearings, storage.log_probs]
    tensors += [storage.values, storage.rewards, storage.returns, storage.advantages]
    allocated = sum(t.numel() * t.element_size() for t in tensors)
    assert (
        storage_bytes(5, 3, observation_bytes=8 * 8 * 4 + 8, head_bytes=0, hidden_bytes=2 * 16 * 4)
        == allocated
    )


RLIMIT_CHILD = """
import resource
from navzoo.memory import _address_space_used
from navzoo.sim.config import SimConfig
from navzoo.sim.memory_estimate import refuse_unless_sim_fits
config = SimConfig(num_envs=4096, resolution=(128, 128))  # about 0.3 GB of depth images
if {limited}:
    limit = _address_space_used() + 256 * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
refuse_unless_sim_fits(config, None)
print("fits")
"""


@pytest.mark.parametrize("limited", [True, False])
def test_an_address_space_limit_is_the_memory_available(limited):
    child = textwrap.dedent(RLIMIT_CHILD.format(limited=limited))
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    if limited:
        assert result.returncode != 0
        assert (
            "ConfigTooLargeError: num_envs=4096 needs about 0.3 GB (0.27 GB for depth 128x128 observations"
            in result.stderr
        )
        assert "left under the address-space limit RLIMIT_AS=" in result.stderr
    else:
        assert result.returncode == 0 and result.stdout == "fits\n", result.stderr


def test_without_proc_meminfo_free_pages_are_the_memory_available(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "_PROC_MEMINFO", tmp_path / "missing")
    found = available_memory()
    assert found is not None and found.nbytes > 0 and found.source == "free RAM"


def test_workers_of_one_machine_share_its_memory(monkeypatch):
    monkeypatch.setattr(memory, "_free_ram", lambda: memory.Available(8_000_000_000, "free RAM"))
    monkeypatch.setattr(memory, "_address_space_left", lambda: None)
    shared = available_memory(sharers=4)
    assert shared == memory.Available(2_000_000_000, "free RAM, shared by 4 workers")
    with pytest.raises(ConfigTooLargeError, match=r"2 GB are available \(free RAM, shared by 4 workers\)"):
        refuse_unless_fits(
            [memory.Part("of buffers", int(SAFETY_FRACTION * 2e9) + 1, (("x", 1),))], sharers=4
        )
