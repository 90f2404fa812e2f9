"""navzoo: embodied-navigation model zoo and transfer-learning toolkit.

`navzoo.load`, `navzoo.BatchSim` and the rest are imported on first use, so `import navzoo` (and the
command line's --help) stays fast; importing it registers navzoo's gymnasium environments.
"""

import importlib

from navzoo.errors import ConfigError, EpisodeError, NavzooError
from navzoo.gym_registration import register_envs
from navzoo.version import __version__

register_envs()

# name -> module
_EXPORTS = {
    "BatchSim": "navzoo.sim",
    "SimConfig": "navzoo.sim",
    "create_model": "navzoo.zoo",
    "list_models": "navzoo.zoo",
    "load": "navzoo.zoo",
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


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'navzoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
