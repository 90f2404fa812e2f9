"""The embedded batch simulator: procedural indoor scenes, PointGoal / Flee / Explore, depth and RGB.

Its names are imported on first use, so that reading navzoo.sim.config (the command line's parsers) does
not load torch and the renderer.
"""

import importlib

# name -> module
_EXPORTS = {
    "BatchSim": "navzoo.sim.batch_sim",
    "SimConfig": "navzoo.sim.config",
    "ACTION_NAMES": "navzoo.sim.config",
    "MOVE_FORWARD": "navzoo.sim.config",
    "STOP": "navzoo.sim.config",
    "TURN_LEFT": "navzoo.sim.config",
    "TURN_RIGHT": "navzoo.sim.config",
    "Episode": "navzoo.sim.episodes",
    "load_episodes": "navzoo.sim.episodes",
    "save_episodes": "navzoo.sim.episodes",
    "split_episodes": "navzoo.sim.episodes",
    "Scene": "navzoo.sim.scenes",
    "generate_scene": "navzoo.sim.scenes",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'navzoo.sim' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
