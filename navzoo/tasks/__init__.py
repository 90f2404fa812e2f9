"""The tasks, each defined once: PointGoal (DD-PPO's task), and the Flee and Explore tasks of its transfer
experiments (section 6, appendices F-G). What a task is made of is in navzoo.tasks.base.

Importing this package registers the tasks as the simulator's (navzoo.sim.task), the objects `TASKS` and
`get_task` give. Adding a task means one more module here, its entry in TASKS and navzoo.names.TASKS, and
its tests.
"""

from navzoo.errors import ConfigError
from navzoo.sim.task import register_task
from navzoo.tasks.base import CardText, Column, Task
from navzoo.tasks.explore import Explore
from navzoo.tasks.flee import Flee
from navzoo.tasks.pointgoal import PointGoal

TASKS: dict[str, Task] = {task.name: task for task in (PointGoal(), Flee(), Explore())}
for _task in TASKS.values():
    register_task(_task.name, _task)


def get_task(name: str) -> Task:
    """The task named `name` ('pointnav', 'flee' or 'explore'); ConfigError for any other."""
    if name not in TASKS:
        raise ConfigError("task", name, tuple(TASKS))
    return TASKS[name]


__all__ = ["TASKS", "CardText", "Column", "Explore", "Flee", "PointGoal", "Task", "get_task"]
