"""The embedded batch simulator: procedural indoor scenes, PointGoal / Flee / Explore, depth and RGB."""

import gymnasium

from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import ACTION_NAMES, MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT, SimConfig
from navzoo.sim.episodes import Episode, load_episodes, save_episodes, split_episodes
from navzoo.sim.scenes import Scene, generate_scene
from navzoo.tasks import TASKS

for _task in TASKS.values():
    gymnasium.register(
        f"navzoo/{_task.gym_id}-v0", entry_point="navzoo.sim.gym_env:NavEnv", kwargs={"task": _task.name}
    )

__all__ = [
    "ACTION_NAMES",
    "MOVE_FORWARD",
    "STOP",
    "TURN_LEFT",
    "TURN_RIGHT",
    "BatchSim",
    "Episode",
    "Scene",
    "SimConfig",
    "generate_scene",
    "load_episodes",
    "save_episodes",
    "split_episodes",
]
