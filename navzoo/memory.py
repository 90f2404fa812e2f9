"""Whether a config's big buffers fit in the memory there is, checked before any of them is allocated.

Each layer estimates its own buffers (navzoo.sim.memory_estimate, navzoo.models.model_memory,
navzoo.train.memory_check sums a training run) as `Part`s; `refuse_unless_fits` compares their sum with the
memory available and raises ConfigTooLargeError naming the fields that drive the estimate.

The estimate counts the buffers that grow with the config (observations, rollouts, maps, scenes,
parameters), not the work memory of a step (the renderer's per-pixel hit buffers, the activations of a PPO
update), the Python and torch runtime, or the process's cache of scene assets. `SAFETY_FRACTION` keeps the
rest of the available memory for those: a config is refused when its buffers alone would take more.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from navzoo.errors import ConfigTooLargeError

# The share of the available memory the estimated buffers may take; the rest is for what they leave out.
SAFETY_FRACTION = 0.8
_PROC_MEMINFO = Path("/proc/meminfo")
_PROC_STATUS = Path("/proc/self/status")


@dataclass(frozen=True)
class Part:
    """One buffer, or a group of them, of the estimate."""

    what: str  # how the message names it, e.g. "of rollout storage (ppo.num_steps=128)"
    nbytes: int
    fields: tuple[
        tuple[str, object], ...
    ]  # the config fields that size it, as (name, value), most telling first


@dataclass(frozen=True)
class Available:
    nbytes: int
    source: str  # where the figure comes from, e.g. "free RAM, MemAvailable"


def available_memory(device: str = "cpu", sharers: int = 1) -> Available | None:
    """The memory buffers on `device` may take: for the CPU, free RAM or what is left of the process's
    address-space limit (RLIMIT_AS) where one is set and smaller; for CUDA, the device's free memory. With
    `sharers` processes allocating at once on this machine (a run's local workers), each gets its share.
    None where it cannot be known, and then nothing is refused."""
    if device.startswith("cuda"):
        import torch  # only here: the CPU path needs no torch

        found = Available(torch.cuda.mem_get_info(device)[0], f"free memory of {device}")
    else:
        found = _free_ram()
        limit = _address_space_left()
        if limit is not None and (found is None or limit.nbytes < found.nbytes):
            found = limit
    if found is None or sharers <= 1:
        return found
    return Available(found.nbytes // sharers, f"{found.source}, shared by {sharers} workers")


def refuse_unless_fits(parts: list[Part], device: str = "cpu", sharers: int = 1) -> None:
    """ConfigTooLargeError unless the parts fit in SAFETY_FRACTION of the memory available."""
    total = sum(part.nbytes for part in parts)
    available = available_memory(device, sharers)
    if available is None or total <= SAFETY_FRACTION * available.nbytes:
        return
    # The message names the parts that make up most of the total, the largest first.
    named = [part for part in sorted(parts, key=lambda p: -p.nbytes) if part.nbytes >= total / 100]
    field, value = named[0].fields[0]
    sizes = " and ".join(f"{gigabytes(part.nbytes)} {part.what}" for part in named)
    fields = list(dict.fromkeys(name for part in named for name, _ in part.fields))
    fix = ", ".join(fields[:-1]) + " or " + fields[-1] if len(fields) > 1 else fields[0]
    raise ConfigTooLargeError(
        field,
        value,
        f"{field}={value!r} needs about {gigabytes(total)} ({sizes}); {gigabytes(available.nbytes)} "
        f"are available ({available.source}), of which these buffers may take "
        f"{SAFETY_FRACTION:.0%}: lower {fix}",
    )


def gigabytes(nbytes: float) -> str:
    """A size in decimal units, to two significant figures: "31 GB", "0.52 GB", "2.1 TB"."""
    if nbytes >= 1e12:
        return f"{nbytes / 1e12:.2g} TB"
    value = nbytes / 1e9
    return f"{value:.0f} GB" if value >= 10 else f"{value:.2g} GB"


def _free_ram() -> Available | None:
    """MemAvailable from /proc/meminfo (Linux); elsewhere the free pages sysconf reports, if any."""
    try:
        for line in _PROC_MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return Available(int(line.split()[1]) * 1024, "free RAM, MemAvailable")
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name (macOS)
        return None
    return Available(pages * size, "free RAM") if pages > 0 and size > 0 else None


def _address_space_left() -> Available | None:
    """What the process's soft RLIMIT_AS leaves of its address space beyond what it already maps."""
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return None
    left = max(limit - _address_space_used(), 0)
    return Available(left, f"left under the address-space limit RLIMIT_AS={gigabytes(limit)}")


def _address_space_used() -> int:
    """VmSize from /proc/self/status, or 0 where it cannot be read (the whole limit then counts)."""
    try:
        for line in _PROC_STATUS.read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
