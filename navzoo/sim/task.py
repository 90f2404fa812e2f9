"""What the simulator asks of a task, and the tasks it can run, by name.

The tasks (navzoo.tasks: PointGoal, Flee, Explore) sit a layer above the simulator and build on it, so the
simulator does not import them: it defines the interface it steps a task through (SimTask) and looks tasks
up in a registry the tasks fill (`register_task`).

Registering can name the module that registers a task instead of the task itself. navzoo's front door
(navzoo/__init__.py) registers its tasks that way: the tasks compute with torch, and `import navzoo` (the
command line's --help with it) must not load torch. The first lookup of such a name imports the module,
which registers the task object in its place, so every simulator gets navzoo's tasks however it is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol, TypeVar

from navzoo.errors import ConfigError

if TYPE_CHECKING:
    import torch

# The simulator a task runs in (BatchSim, which builds on this module and so cannot be imported here).
Sim = TypeVar("Sim", contravariant=True)


class SimTask(Protocol[Sim]):
    """A task as the simulator runs it: its episode start, reward, metrics and extra sensors. A task keeps
    its per-environment state as tensors on the simulator (`state_tensors` names them for checkpoints)."""

    name: str  # the config's `task`
    has_goal: bool  # episodes have a goal (`sim.goal`), and the task observes it (navzoo.names.GOAL_SENSOR)
    state_tensors: tuple[str, ...]  # the simulator attributes `allocate` creates
    starts_at_field_source: bool  # episodes start where the distance field is measured from

    def allocate(self, sim: Sim) -> None:
        """Create the per-environment tensors the task keeps (its names are in `state_tensors`)."""
        ...

    def begin(self, sim: Sim, envs: torch.Tensor) -> None:
        """Set the task's per-episode state of `envs` whose episodes start (positions are already set)."""
        ...

    def step(self, sim: Sim, stop: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """After the agents moved: the reward [N] and the task's metrics of every environment."""
        ...

    def observations(self, sim: Sim, envs: torch.Tensor | slice) -> dict[str, torch.Tensor]:
        """The task's sensors besides the cameras, for the listed environments."""
        ...


# name -> the task, or the module that registers it when imported
_REGISTERED: dict[str, SimTask | str] = {}


def register_task(name: str, task: SimTask | str) -> None:
    """Make `task` the simulator's task `name`; a module name defers importing it to the first lookup."""
    _REGISTERED[name] = task


def lookup_task(name: str) -> SimTask:
    """The task registered as `name`; ConfigError for a name no one registered."""
    if name not in _REGISTERED:
        raise ConfigError("task", name, tuple(_REGISTERED))
    task = _REGISTERED[name]
    if isinstance(task, str):
        importlib.import_module(task)
        task = _REGISTERED[name]
        if isinstance(task, str):
            raise LookupError(f"importing {task} did not register the simulator's task {name!r}")
    return task
