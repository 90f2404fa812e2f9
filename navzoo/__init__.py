"""navzoo: embodied-navigation model zoo and transfer-learning toolkit.

`navzoo.load`, `navzoo.BatchSim` and the rest are imported on first use, so `import navzoo` (and the
command line's --help) stays fast; importing it registers navzoo's gymnasium environments, and its tasks
as the simulator's (by the module that defines them, navzoo.sim.task, so that torch is not loaded yet).
"""

from typing import TYPE_CHECKING

from navzoo.errors import ConfigError, EpisodeError, NavzooError
from navzoo.interop.gym_registration import register_envs
from navzoo.lazy_exports import lazy_exports
from navzoo.names import TASKS as _TASK_NAMES
from navzoo.sim.task import register_task
from navzoo.version import __version__

if TYPE_CHECKING:  # the lazy names below, for type checkers and editors
    from navzoo.sim.batch_sim import BatchSim
    from navzoo.sim.config import SimConfig
    from navzoo.zoo.loader import create_model, list_models, load

register_envs()
for _task in _TASK_NAMES:
    register_task(_task, "navzoo.tasks")

# name -> module
_EXPORTS = {
    "BatchSim": "navzoo.sim",
    "SimConfig": "navzoo.sim",
    "create_model": "navzoo.zoo.loader",
    "list_models": "navzoo.zoo.loader",
    "load": "navzoo.zoo.loader",
}
__all__ = [  # noqa: RUF022 - the eager names, then the lazy ones
    "ConfigError",
    "EpisodeError",
    "NavzooError",
    "__version__",
    "BatchSim",
    "SimConfig",
    "create_model",
    "list_models",
    "load",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
