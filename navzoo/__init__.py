"""navzoo: embodied-navigation model zoo and transfer-learning toolkit."""

from navzoo.errors import ConfigError, EpisodeError, NavzooError
from navzoo.sim import BatchSim, SimConfig
from navzoo.version import __version__
from navzoo.zoo import create_model, list_models, load

__all__ = [
    "BatchSim",
    "ConfigError",
    "EpisodeError",
    "NavzooError",
    "SimConfig",
    "__version__",
    "create_model",
    "list_models",
    "load",
]
