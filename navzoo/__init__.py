"""navzoo: embodied-navigation model zoo and transfer-learning toolkit."""

from navzoo.errors import ConfigError, EpisodeError, NavzooError
from navzoo.sim import BatchSim, SimConfig
from navzoo.zoo import create_model, list_models, load

__version__ = "0.1.0"

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
