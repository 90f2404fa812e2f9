"""The command line's shared vocabulary: options and overrides in any order, one meaning per option on every
command, deprecated spellings that still work, habitat-baselines' keys, --print-config, --version, "did you
mean", and help that answers without loading torch."""

import argparse
import errno
import os
import subprocess
import sys

import pytest
import torch
import yaml

from navzoo import __version__
from navzoo.cli.main import COMMANDS, _subparser, build_parser, main
from navzoo.cli.options import resolve_device, set_threads
from navzoo.cli.os_errors import describe_os_error
from navzoo.config_base import KEY_SYNONYMS
from navzoo.errors import ConfigError
from navzoo.sim import SimConfig
from navzoo.train.config import TrainConfig, load_config
from navzoo.train.overrides import HABITAT_KEYS

FINETUNE = [
    "finetune",
    "--task",
    "flee",
    "--setting",
    "pointgoal-finetune",
    "--from",
    "navzoo-pointnav-depth",
]


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
    argv = ["train", "sim.num_envs=8", "navzoo-pointnav-depth", "--scene-families", "office", "apartment"]
    argv += ["ppo.lr=1e-4", "--resolution", "40", "56", "--frames", "3e6", "--threads", "1", "seed=7"]
    config = _printed_config(capsys, [*argv, "--print-config"])
    assert config["sim"]["num_envs"] == 8 and config["ppo"]["lr"] == 1e-4 and config["seed"] == 7
    assert config["sim"]["scene_families"] == ["office", "apartment"]
    assert config["sim"]["resolution"] == [40, 56]
    assert (config["total_frames"], config["torch_threads"]) == (3_000_000, 1)
    # The options are the config keys' shortcuts: an option wins over an override of the same key.
    config = _printed_config(
        capsys, ["train", "pointnav-blind", "total_frames=5", "--frames", "9", "--print-config"]
    )
    assert config["total_frames"] == 9


def test_an_option_wins_over_the_override_of_its_key_on_finetune_too(capsys):
    """finetune used to let total_frames= beat --frames, where train lets the option win."""
    assert (
        _printed_config(capsys, [*FINETUNE, "total_frames=5000", "--frames", "7000", "--print-config"])[
            "train"
        ]["total_frames"]
        == 7000
    )
    assert (
        _printed_config(capsys, [*FINETUNE, "total_frames=5000", "--print-config"])["train"]["total_frames"]
        == 5000
    )


@pytest.mark.parametrize(
    ("argv", "spelling"),
    [
        (["train", "pointnav-blind"], "--out"),
        (["finetune"], "--out"),
        (["eval"], "--families"),
        (["episodes", "val.json.gz"], "--families"),
    ],
)
def test_one_spelling_per_option(capsys, argv, spelling):
    """--run-dir names a run folder and --scene-families the scene families, on every command."""
    with pytest.raises(SystemExit) as exit_info:
        build_parser(argv[0]).parse_args([*argv, spelling, "x"])
    assert exit_info.value.code == 2
    assert f"unrecognized arguments: {spelling}" in capsys.readouterr().err


def test_out_is_the_output_folder_of_eval_and_push_only():
    for command in COMMANDS:
        for action in _subparser(build_parser(command), command)._actions:
            if "--out" in action.option_strings:
                assert command in ("eval", "push") and "folder" in action.help


def test_device_and_threads_mean_the_same_on_every_command(capsys):
    for command in COMMANDS:
        options = {
            o: a for a in _subparser(build_parser(command), command)._actions for o in a.option_strings
        }
        if "--device" in options:  # auto everywhere; on train and finetune through the config's default
            assert options["--device"].default == ("auto" if command not in ("train", "finetune") else None)
            assert "auto (CUDA when there is one, else the CPU)" in options["--device"].help
        if "--threads" in options:
            assert "0 is automatic" in options["--threads"].help
    assert TrainConfig().device == "auto"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    threads = torch.get_num_threads()
    set_threads(0)  # automatic: torch's own choice, left alone
    assert torch.get_num_threads() == threads
    with pytest.raises(
        ConfigError, match=r"invalid threads=-1: allowed values are 0 \(automatic\) or a positive"
    ):
        set_threads(-1)
    assert (
        _printed_config(capsys, ["train", "pointnav-blind", "--threads", "0", "--print-config"])[
            "torch_threads"
        ]
        == 0
    )


def test_habitat_baselines_keys_set_navzoo_s_own(capsys):
    argv = ["train", "pointnav-blind", "habitat_baselines.num_environments=3", "total_num_steps=1e5"]
    argv += ["habitat_baselines.checkpoint_interval=7", "habitat_baselines.log_interval=2"]
    argv += ["habitat_baselines.rl.ppo.lr=1e-3", "habitat_baselines.rl.ppo.ppo_epoch=3"]
    argv += ["habitat_baselines.rl.ddppo.sync_frac=0.5", "habitat_baselines.wb.project_name=nav"]
    config = _printed_config(capsys, [*argv, "--print-config"])
    assert (config["sim"]["num_envs"], config["total_frames"]) == (3, 100_000)
    assert (config["checkpoint_every"], config["log_every"]) == (7, 2)
    assert (config["ppo"]["lr"], config["ppo"]["ppo_epoch"]) == (1e-3, 3)
    assert (config["distributed"]["sync_frac"], config["wandb"]["project"]) == (0.5, "nav")
    # Where the meaning differs there is no alias: habitat's checkpoint folder is not navzoo's run folder.
    assert main(["train", "pointnav-blind", "habitat_baselines.checkpoint_folder=x", "--print-config"]) == 2
    assert "invalid habitat_baselines=" in capsys.readouterr().err


def test_a_mistyped_key_gets_a_suggestion_before_the_list_of_fields(capsys):
    assert main(["train", "pointnav-blind", "--print-config", "sim.num_env=8"]) == 2
    assert "invalid sim.num_env=8: did you mean 'num_envs'? Allowed values are fields of SimConfig:" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("override", "meant"),
    [
        ("ppo.learning_rate=1e-4", "ppo.lr"),  # stable-baselines3's name, in navzoo's block
        ("ppo.learning_rat=1e-4", "ppo.lr"),  # and mistyped
        ("learning_rate=1e-4", "ppo.lr"),  # at the top level
        ("num_processes=4", "sim.num_envs"),  # habitat-baselines' older name
        ("sim.num_processes=4", "sim.num_envs"),
        ("ppo.n_envs=4", "sim.num_envs"),  # in another block
        ("n_steps=64", "ppo.num_steps"),
        ("num_steps=64", "ppo.num_steps"),
        ("ppo.n_epochs=4", "ppo.ppo_epoch"),
        ("gae_lambda=0.9", "ppo.tau"),
        ("ppo.ent_coef=0", "ppo.entropy_coef"),
        ("ppo.vf_coef=0.5", "ppo.value_loss_coef"),
        ("ppo.clip_range=0.1", "ppo.clip_param"),
        ("max_grad_norm=0.5", "ppo.max_grad_norm"),
        ("gamma=0.9", "ppo.gamma"),
        ("entropy_coef=0", "ppo.entropy_coef"),  # habitat's PPO names are navzoo's, in the ppo block
        ("ppo_epoch=4", "ppo.ppo_epoch"),
        ("num_mini_batch=4", "ppo.num_mini_batch"),
        ("value_loss_coef=0.5", "ppo.value_loss_coef"),
        ("clip_param=0.1", "ppo.clip_param"),
        ("tau=0.9", "ppo.tau"),
        ("ppo.total_num_steps=1e5", "total_frames"),
        ("sim.num_environments=4", "sim.num_envs"),
        ("total_timesteps=1e5", "total_frames"),
    ],
)
def test_other_libraries_names_suggest_navzoo_s_key(capsys, override, meant):
    assert main(["train", "pointnav-blind", override, "--print-config"]) == 2
    key = override.partition("=")[0]
    err = capsys.readouterr().err
    assert f"invalid {key}=" in err and f"did you mean {meant!r}?" in err


def test_a_synonym_whose_meaning_differs_says_how():
    with pytest.raises(ConfigError, match=r"did you mean 'ppo.num_mini_batch'\?.*not their size"):
        load_config("pointnav-blind", ["ppo.batch_size=64"])


def test_the_synonyms_agree_with_the_accepted_habitat_keys_and_name_real_keys():
    flat = TrainConfig().to_dict()
    for name, target in KEY_SYNONYMS.items():
        node = flat
        for part in target.split("."):
            assert part in node, f"{name}: {target} is not a training config key"
            node = node[part]
    for key, ours in HABITAT_KEYS.items():  # an accepted alias suggests what it already sets
        leaf = key.rpartition(".")[2]
        if leaf in KEY_SYNONYMS and not ours.startswith("wandb."):
            assert KEY_SYNONYMS[leaf] == ours, key
    # A config read on its own is offered its own field, and nothing from another config.
    with pytest.raises(ConfigError, match="did you mean 'num_envs'"):
        SimConfig.from_dict({"num_processes": 4})
    with pytest.raises(ConfigError) as info:
        SimConfig.from_dict({"learning_rate": 1e-4})
    assert "ppo.lr" not in str(info.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "pointnav-blnd", "--run-dir", "r"],
            "invalid config='pointnav-blnd': did you mean 'pointnav-blind'?",
        ),
        (
            ["eval", "goal-folower"],
            "unknown agent 'goal-folower': did you mean the baseline 'goal-follower'?",
        ),
        (
            [*FINETUNE[:3], "--setting", "scrach", *FINETUNE[5:]],
            "invalid setting='scrach': did you mean 'scratch'?",
        ),
    ],
)
def test_mistyped_presets_baselines_and_settings_get_a_suggestion(
    capsys, tmp_path, monkeypatch, argv, message
):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and not (tmp_path / "r").exists()


def test_training_needs_a_run_folder_but_printing_the_config_does_not(capsys):
    assert main(["train", "pointnav-blind"]) == 2
    assert "run_dir" in capsys.readouterr().err


def test_finetune_prints_the_transfer_run_it_would_start(capsys):
    printed = _printed_config(capsys, [*FINETUNE, "--frames", "2e5", "--num-envs", "4", "--print-config"])
    assert printed["transfer"]["setting"] == "pointgoal-finetune"
    train = printed["train"]
    assert (train["total_frames"], train["sim"]["num_envs"], train["sim"]["task"]) == (200_000, 4, "flee")
    assert (train["algorithm"], train["init_from"]) == ("ppo", None)
    # The base run split its 64 environments into 8 mini-batches; 4 environments keep one each.
    assert train["ppo"]["num_mini_batch"] == 4
    # A count given on the command line is the user's, and checked as given.
    assert main([*FINETUNE, "--num-envs", "4", "ppo.num_mini_batch=8", "--print-config"]) == 2
    assert "ppo.num_mini_batch=8" in capsys.readouterr().err


def test_the_simulator_device_is_the_training_device():
    """`sim.device=cuda` used to be overwritten by the trainer's device; it now chooses it, and a
    contradiction is refused."""
    assert load_config("pointnav-blind", ["sim.device=cpu"]).worker_device() == "auto"
    assert load_config("pointnav-blind", ["device=cpu"]).worker_device() == "cpu"
    if not torch.cuda.is_available():  # refused with the reason, before anything is built
        with pytest.raises(ConfigError) as refused:
            load_config("pointnav-blind", ["sim.device=cuda"])
        assert str(refused.value) == (
            "invalid sim.device='cuda': allowed values are 'cpu' "
            "(no CUDA device is available on this machine)"
        )
        return
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
    from navzoo.agents.baselines import BASELINES
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


def test_file_system_errors_are_one_line_naming_the_path(capsys, tmp_path):
    """A real ENOTDIR: the output's folder is a file. One line, no traceback; --debug shows the traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "sub" / "val.json.gz"
    assert main(["episodes", str(out), "--scene-families", "apartment-s"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"navzoo episodes: error: {blocker / 'sub'}") and "is a file, not a folder" in err
    with pytest.raises(NotADirectoryError):
        main(["--debug", "episodes", str(out), "--scene-families", "apartment-s"])


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "the disk is full"),
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permission denied"),
        (errno.EEXIST, "in the way"),
        (errno.ELOOP, "Too many levels of symbolic links"),
    ],
)
def test_each_file_system_error_says_what_to_do(code, words):
    message = describe_os_error(OSError(code, os.strerror(code), "/runs/x"))
    assert message.startswith("/runs/x: ") and words in message
