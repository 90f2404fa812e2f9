"""The embedded batch simulator: procedural indoor scenes, PointGoal / Flee / Explore, depth and RGB.

Its names are imported on first use, so that reading navzoo.sim.config (the command line's parsers) does
not load torch and the renderer.
"""

from navzoo.lazy_exports import lazy_exports

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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
