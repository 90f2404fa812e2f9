"""The command line's shared vocabulary: options and overrides in any order, --print-config, --version, "did
you mean", and help that answers without loading torch."""

import argparse
import subprocess
import sys

import pytest
import torch
import yaml

from navzoo import __version__
from navzoo.cli import COMMANDS, _subparser, build_parser, main
from navzoo.errors import ConfigError
from navzoo.train.config import load_config


def _printed_config(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"navzoo {__version__}"


def test_a_mistyped_command_gets_a_suggestion(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["trian", "pointnav-blind"])
    assert exit_.value.code == 2
    assert "did you mean 'train'?" in capsys.readouterr().err


def test_print_config_takes_options_and_overrides_in_any_order(capsys):
    argv = ["train", "sim.num_envs=8", "navzoo-pointnav-depth", "--families", "office", "apartment"]
    argv += ["ppo.lr=1e-4", "--resolution", "32", "48", "--frames", "3e6", "--threads", "1", "seed=7"]
    config = _printed_config(capsys, [*argv, "--print-config"])
    assert config["sim"]["num_envs"] == 8 and config["ppo"]["lr"] == 1e-4 and config["seed"] == 7
    assert config["sim"]["scene_families"] == ["office", "apartment"]
    assert config["sim"]["resolution"] == [32, 48]
    assert (config["total_frames"], config["torch_threads"]) == (3_000_000, 1)
    # The options are the config keys' shortcuts: an option wins over an override of the same key.
    config = _printed_config(
        capsys, ["train", "pointnav-blind", "total_frames=5", "--frames", "9", "--print-config"]
    )
    assert config["total_frames"] == 9


def test_a_mistyped_key_gets_a_suggestion(capsys):
    assert main(["train", "pointnav-blind", "--print-config", "sim.num_env=8"]) == 2
    assert "did you mean 'num_envs'?" in capsys.readouterr().err


def test_training_needs_a_run_folder_but_printing_the_config_does_not(capsys):
    assert main(["train", "pointnav-blind"]) == 2
    assert "run_dir" in capsys.readouterr().err


def test_finetune_prints_the_transfer_run_it_would_start(capsys):
    argv = [
        "finetune",
        "--task",
        "flee",
        "--setting",
        "pointgoal-finetune",
        "--from",
        "navzoo-pointnav-depth",
    ]
    printed = _printed_config(capsys, [*argv, "--frames", "2e5", "--num-envs", "4", "--print-config"])
    assert printed["transfer"]["setting"] == "pointgoal-finetune"
    train = printed["train"]
    assert (train["total_frames"], train["sim"]["num_envs"], train["sim"]["task"]) == (200_000, 4, "flee")
    assert (train["algorithm"], train["init_from"]) == ("ppo", None)


def test_the_simulator_device_is_the_training_device():
    """`sim.device=cuda` used to be overwritten by the trainer's device; it now chooses it, and a
    contradiction is refused."""
    assert load_config("pointnav-blind", ["sim.device=cpu"]).worker_device() == "auto"
    assert load_config("pointnav-blind", ["device=cpu"]).worker_device() == "cpu"
    if not torch.cuda.is_available():
        pytest.skip("a CUDA simulator needs a CUDA device")
    assert load_config("pointnav-blind", ["sim.device=cuda"]).worker_device() == "cuda"
    with pytest.raises(ConfigError, match=r"sim\.device"):
        load_config("pointnav-blind", ["sim.device=cuda", "device=cpu"]).validate()


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_does_not_load_torch(command):
    """`navzoo --help` and `navzoo COMMAND --help` import only what the parser needs."""
    argv = ["--help"] if command is None else [command, "--help"]
    code = (
        f"import sys\nfrom navzoo.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(' '.join(m for m in ('torch', 'huggingface_hub', 'gradio') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "usage: navzoo" in done.stdout
    assert done.stderr == ""


def test_the_names_the_command_line_offers_are_the_ones_the_code_defines():
    """navzoo.names keeps the names importable without torch; the modules that define them agree."""
    from navzoo import names
    from navzoo.baselines import BASELINES
    from navzoo.tasks import TASKS

    assert tuple(TASKS) == names.TASKS
    assert tuple(BASELINES) == names.BASELINES
    assert set(names.GOAL_BASELINES) <= set(BASELINES)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help_that_shows_its_default(command):
    subparser = _subparser(build_parser(command), command)
    for action in subparser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = action.option_strings or action.dest
        assert action.help and action.help != argparse.SUPPRESS, f"{command} {name} has no help"
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            assert "default" in action.help, f"{command} {name}: help does not show the default"
