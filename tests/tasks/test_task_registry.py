"""The simulator's task registry (navzoo.sim.task): navzoo's tasks are in it from `import navzoo` on, without
torch, and a simulator runs the task registered under its config's name."""

import subprocess
import sys

import pytest

from navzoo import names
from navzoo.errors import ConfigError
from navzoo.sim import BatchSim, SimConfig
from navzoo.sim import task as sim_task
from navzoo.tasks import TASKS, get_task


def test_navzoo_tasks_are_the_simulators():
    assert tuple(TASKS) == names.TASKS
    for name in names.TASKS:
        assert sim_task.lookup_task(name) is get_task(name)


def test_a_simulator_runs_the_registered_task():
    sim = BatchSim(SimConfig(task="flee", num_envs=2, sensors=()))
    assert sim.task is get_task("flee")
    sim.close()


def test_unknown_names_are_config_errors():
    with pytest.raises(ConfigError, match="'pointnav', 'flee', 'explore'"):
        sim_task.lookup_task("objectnav")


def test_a_module_that_does_not_register_its_task_is_named(monkeypatch):
    monkeypatch.setitem(sim_task._REGISTERED, "objectnav", "navzoo.names")
    with pytest.raises(LookupError, match=r"navzoo\.names did not register"):
        sim_task.lookup_task("objectnav")


def test_import_navzoo_registers_the_tasks_without_torch():
    script = (
        "import sys, navzoo\n"
        "from navzoo.sim.task import lookup_task\n"
        "assert 'torch' not in sys.modules and 'navzoo.tasks' not in sys.modules\n"
        "flee = lookup_task('flee')\n"
        "from navzoo.tasks import TASKS\n"
        "assert flee is TASKS['flee']\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
