"""The registry, create_model / load, the weight folder format and offline loading from the HF cache."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import huggingface_hub
import pytest
import torch
from safetensors.torch import save_file

import navzoo
from navzoo.errors import ConfigError, UnknownModelError, WeightsFormatError, WeightsNotAvailableError
from navzoo.hub.pull import pull
from navzoo.models import GOAL_SENSOR, ActorCritic, PointNavPolicy, PolicyConfig
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME, save_pretrained
from navzoo.zoo import registry as model_registry
from navzoo.zoo.loader import load_model_config
from navzoo.zoo.registry import ModelEntry, Provenance, model_entry
from tests.support import put_in_hf_cache, random_observations

RELEASED_FILES = {
    "gibson-4plus-resnet50.pth",
    "gibson-4plus-mp3d-train-val-test-resnet50.pth",
    "gibson-2plus-resnet50.pth",
    "gibson-2plus-se-resneXt50.pth",
    "gibson-2plus-se-resneXt101-lstm1024.pth",
    "gibson-2plus-mp3d-train-val-test-se-resneXt50-rgb.pth",
    "gibson-0plus-mp3d-train-val-test-blind.pth",
    # In habitat's ddppo-models folder without a README row of their own.
    "gibson-2plus-se-resneXt101.pth",
    "gibson-2plus-se-resneXt50-rgb.pth",
}


pytestmark = pytest.mark.usefixtures("one_thread")


def step(policy: PointNavPolicy, n: int = 2, seed: int = 0):
    config = policy.config
    gen = torch.Generator().manual_seed(seed)
    obs = random_observations(config, n, gen)
    hidden = torch.randn(n, *policy.hidden_state_shape, generator=gen)
    with torch.no_grad():
        return policy(obs, hidden, torch.arange(n) % 4, torch.ones(n, dtype=torch.bool))


def test_list_models_with_wildcards():
    assert navzoo.list_models("pointnav-se-resnext*") == [
        "pointnav-se-resnext101",
        "pointnav-se-resnext101-lstm512",
        "pointnav-se-resnext50",
        "pointnav-se-resnext50-rgb",
        "pointnav-se-resnext50-rgb-gibson2plus",
    ]
    assert navzoo.list_models("*-rgb") == [
        "bps-se-resnet9-rgb",
        "navzoo-pointnav-rgb",
        "pointnav-se-resnext50-rgb",
        "pointnav-timm-resnet50-rgb",
    ]
    assert navzoo.list_models(["bps-*", "pointnav-blind"]) == [
        "bps-se-resnet9",
        "bps-se-resnet9-rgb",
        "pointnav-blind",
    ]
    assert navzoo.list_models("POINTNAV-RESNET50") == ["pointnav-resnet50"]
    assert navzoo.list_models("pointnav-resnet50?") == []
    assert navzoo.list_models("nothing-*") == []
    everything = navzoo.list_models()
    assert everything == sorted(everything) and len(everything) == 22  # 9 released, 3 shipped, 10 others


def test_pretrained_lists_exactly_the_entries_load_can_load():
    pretrained = navzoo.list_models(pretrained=True)
    sources = {name: model_entry(name).weights_source for name in pretrained}
    assert sorted(sources.values()) == ["habitat-release"] * 9 + ["package"] * 3
    for name in set(navzoo.list_models()) - set(pretrained):  # architectures, timm encoders included
        assert model_entry(name).weights_source is None
        with pytest.raises(UnknownModelError, match="architecture without released weights"):
            navzoo.load(name)


def test_released_models_carry_architecture_sensors_and_provenance():
    released = [model_entry(n) for n in navzoo.list_models() if "released" in model_entry(n).tags]
    assert {e.provenance.original_file for e in released} == RELEASED_FILES
    for entry in released:
        p = entry.provenance
        assert entry.release_file == p.original_file and entry.hub_repo is None
        assert "DD-PPO" in p.paper and p.original_url.endswith("ddppo-models/" + p.original_file)
        results = (p.val_spl, p.val_success, p.test_spl, p.test_success)
        if p.original_file in ("gibson-2plus-se-resneXt101.pth", "gibson-2plus-se-resneXt50-rgb.pth"):
            assert results == (None,) * 4 and p.results_source is None  # nothing reported for these files
        else:
            assert all(0 < v < 1 for v in results)
        assert entry.config.num_actions == 4 and entry.config.rnn_type == "LSTM"
        assert entry.config.num_recurrent_layers == 2
    best = model_entry("pointnav-se-resnext101")
    assert (best.config.backbone, best.config.hidden_size, best.config.sensors) == (
        "se_resneXt101",
        1024,
        ("depth", GOAL_SENSOR),
    )
    assert (best.provenance.val_spl, best.provenance.test_spl) == (0.969, 0.948)
    rgb = model_entry("pointnav-se-resnext50-rgb").config
    assert rgb.sensors == ("rgb", GOAL_SENSOR) and rgb.normalize_visual_inputs
    assert model_entry("pointnav-blind").config.is_blind
    assert model_entry("pointnav-resnet50-gibson4plus").provenance.training_data == "Gibson-4+"
    assert model_entry("pointnav-resnet18").provenance.val_spl is None  # nothing reported, nothing invented


@pytest.mark.parametrize("name", navzoo.list_models())
def test_every_zoo_entry_builds_and_acts(name):
    policy = navzoo.create_model(name)
    assert policy.config == model_entry(name).config and policy.name == name
    out = step(policy)
    assert out.distribution.probs.shape == (2, policy.config.num_actions)
    assert torch.isfinite(out.value).all()


def test_create_model_overrides_and_errors():
    small = navzoo.create_model("pointnav-resnet18", resolution=(64, 64), hidden_size=32)
    assert small.config.resolution == (64, 64) and small.config.hidden_size == 32
    with pytest.raises(ConfigError, match="overrides"):
        navzoo.create_model("pointnav-resnet18", layers=3)
    with pytest.raises(ConfigError, match="invalid hidden_size"):
        navzoo.create_model("pointnav-resnet18", hidden_size=-1)
    with pytest.raises(ConfigError, match=r"pretrained.*list_models"):
        navzoo.create_model("pointnav-resnet18", pretrained=True)
    with pytest.raises(ConfigError, match="weights fix the architecture"):
        navzoo.create_model("pointnav-resnet50", pretrained=True, hidden_size=64)
    with pytest.raises(UnknownModelError, match="did you mean 'pointnav-se-resnext101'"):
        navzoo.create_model("pointnav-se-resnext10")


def test_unknown_names_and_architectures_without_weights():
    with pytest.raises(UnknownModelError, match="did you mean 'pointnav-blind'"):
        navzoo.load("pointnav-blnd")
    with pytest.raises(UnknownModelError, match="list_models"):
        navzoo.load("completely-different")
    with pytest.raises(UnknownModelError, match="not an existing folder") as folder:
        navzoo.load("./no/such/folder")
    assert "hf-hub:" not in str(folder.value)
    # A Hub repository id written without the prefix: the message says how to write it.
    with pytest.raises(UnknownModelError, match="write hf-hub:org/model for the Hugging Face Hub"):
        navzoo.load("org/model")
    with pytest.raises(UnknownModelError, match="navzoo convert"):
        navzoo.load(Path(__file__))
    with pytest.raises(
        UnknownModelError, match=r"without released weights.*create_model\('bps-se-resnet9'\)"
    ):
        navzoo.load("bps-se-resnet9")


def test_save_and_load_folder_round_trip(tmp_path):
    policy = navzoo.create_model("pointnav-resnet18", resolution=(64, 96), hidden_size=32)
    with torch.no_grad():
        policy.critic.fc.bias.fill_(0.25)
    folder = save_pretrained(policy, tmp_path / "model")
    assert sorted(p.name for p in folder.iterdir()) == [CONFIG_NAME, WEIGHTS_NAME]
    config = json.loads((folder / CONFIG_NAME).read_text())
    assert config["architecture"]["backbone"] == "resnet18" and config["architecture"]["sensors"] == [
        "depth",
        GOAL_SENSOR,
    ]
    assert config["provenance"]["paper"].startswith("Wijmans")
    for source in (folder, str(folder)):
        loaded = navzoo.load(source)
        assert not loaded.training and loaded.config == policy.config and loaded.name == "pointnav-resnet18"
        policy.eval()
        before, after = step(policy), step(loaded)
        assert torch.equal(before.distribution.logits, after.distribution.logits)
        assert torch.equal(before.value, after.value) and torch.equal(before.hidden, after.hidden)


def test_create_model_takes_a_model_folder_as_timm_takes_hub_ids(tmp_path):
    """timm's create_model('hf-hub:org/x', pretrained=...) habit: the architecture of a saved model,
    with its weights or freshly initialised."""
    folder = save_pretrained(navzoo.load("navzoo-pointnav-blind"), tmp_path / "model")
    trained, fresh = navzoo.create_model(str(folder), pretrained=True), navzoo.create_model(str(folder))
    assert trained.config == fresh.config and trained.name == "navzoo-pointnav-blind"
    assert fresh.training and not trained.training
    key = "net.state_encoder.rnn.weight_hh_l0"
    assert not torch.equal(trained.state_dict()[key], fresh.state_dict()[key])
    with pytest.raises(ConfigError, match=r"config\.json fixes the architecture"):
        navzoo.create_model(str(folder), hidden_size=8)


def test_load_model_config_checks_the_weights_header_without_reading_tensors(tmp_path):
    """A check before training (a policy teacher's cameras and size) needs the config, not the tensors."""
    for name in ("navzoo-pointnav-rgb", "navzoo-pointnav-blind"):
        config, loaded = load_model_config(name), navzoo.load(name).config
        assert config == loaded and config.metadata == loaded.metadata
    policy = navzoo.create_model("pointnav-simple-cnn", hidden_size=16)
    folder = save_pretrained(policy, tmp_path / "model")
    config = navzoo.load(folder).config
    # The same header over tensors load() refuses to act with: only the header is read.
    nan = {k: v * math.nan if v.is_floating_point() else v for k, v in policy.state_dict().items()}
    save_file(nan, folder / WEIGHTS_NAME)
    with pytest.raises(WeightsFormatError, match="NaN"):
        navzoo.load(folder)
    assert load_model_config(folder) == config and load_model_config(str(folder)) == config
    # What the header shows is checked as load() checks it.
    other = navzoo.create_model("pointnav-simple-cnn", hidden_size=24)
    save_file(other.state_dict(), folder / WEIGHTS_NAME)
    with pytest.raises(WeightsFormatError, match="wrong shape"):
        load_model_config(folder)
    (folder / WEIGHTS_NAME).unlink()
    with pytest.raises(WeightsFormatError, match="does not exist"):
        load_model_config(folder)


def test_exported_files_follow_the_umask_so_a_group_can_read_them(tmp_path):
    previous = os.umask(0o022)
    try:
        folder = save_pretrained(navzoo.load("navzoo-pointnav-blind"), tmp_path / "model")
    finally:
        os.umask(previous)
    assert {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()} == {
        CONFIG_NAME: 0o644,
        WEIGHTS_NAME: 0o644,
    }


def test_a_model_folder_written_before_models_had_a_task_loads(tmp_path):
    """config.json as navzoo wrote it before tasks and dummy goals existed (the shipped agents' layout):
    name and provenance beside the architecture, no task, no dummy_goal. It is a PointGoal model."""
    policy = navzoo.create_model(
        "bps-se-resnet9", hidden_size=16, base_planes=16, rnn_type="GRU", num_recurrent_layers=1
    )
    folder = tmp_path / "old"
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in policy.state_dict().items()}, folder / WEIGHTS_NAME)
    old = {
        "format": "navzoo-policy",
        "format_version": 1,
        "name": "navzoo-pointnav-depth",
        "architecture": {
            "backbone": "se_resnet9",
            "sensors": ["depth", GOAL_SENSOR],
            "resolution": [64, 64],
            "hidden_size": 16,
            "rnn_type": "GRU",
            "num_recurrent_layers": 1,
            "num_actions": 4,
            "base_planes": 16,
            "input_avgpool": False,
            "normalize_visual_inputs": False,
            "timm_pretrained": False,
        },
        "provenance": {"source": "navzoo train", "run": "navzoo-pointnav-depth", "frames": 1716224},
    }
    (folder / CONFIG_NAME).write_text(json.dumps(old, indent=2) + "\n")
    loaded = navzoo.load(folder)
    assert loaded.config == policy.config and loaded.config.dummy_goal is None
    assert (loaded.name, loaded.task, loaded.provenance) == (old["name"], "pointnav", old["provenance"])
    assert torch.equal(step(policy.eval()).value, step(loaded).value)
    # Saved again: the same layout, with the fields added since.
    again = json.loads((save_pretrained(loaded, tmp_path / "again") / CONFIG_NAME).read_text())
    # Saved again, it gains the fields added since, at their defaults.
    added = {"net": "resnet", "dummy_goal": None, "seen_map_size": None, "seen_map_cell": None}
    assert again == {**old, "task": "pointnav", "architecture": {**old["architecture"], **added}}


def test_a_folder_named_like_a_zoo_entry_does_not_shadow_it(tmp_path, monkeypatch):
    name = "navzoo-pointnav-depth"
    save_pretrained(navzoo.create_model("pointnav-blind", hidden_size=16), tmp_path / name, name="mine")
    monkeypatch.chdir(tmp_path)
    zoo_model = navzoo.load(name)
    assert zoo_model.name == name and zoo_model.config == model_entry(name).config
    assert pull(name) == model_entry(name).packaged
    for folder in (f"./{name}", tmp_path / name, Path(name)):  # a path, absolute or not, is a folder
        local = navzoo.load(folder)
        assert local.name == "mine" and local.config.is_blind


@pytest.fixture
def saved(tmp_path) -> Path:
    return save_pretrained(navzoo.create_model("pointnav-blind", hidden_size=16), tmp_path / "blind")


def test_truncated_or_corrupt_weights_are_reported(saved):
    weights = saved / WEIGHTS_NAME
    data = weights.read_bytes()
    for broken in (data[: len(data) // 2], data[:6], b"\x00" * 64, b""):
        weights.write_bytes(broken)
        with pytest.raises(WeightsFormatError, match="corrupt or truncated"):
            navzoo.load(saved)


def test_config_and_weights_that_disagree_are_reported(saved, tmp_path):
    other = save_pretrained(navzoo.create_model("pointnav-blind", hidden_size=24), tmp_path / "other")
    shutil.copy(other / WEIGHTS_NAME, saved / WEIGHTS_NAME)
    with pytest.raises(
        WeightsFormatError, match=r"'blind'.*wrong shape.*weight_hh_l0: \(96, 24\) in the file.*disagree"
    ):
        navzoo.load(saved)
    depth = save_pretrained(
        navzoo.create_model("pointnav-resnet18", resolution=(32, 32), hidden_size=16), tmp_path / "d"
    )
    shutil.copy(depth / WEIGHTS_NAME, saved / WEIGHTS_NAME)
    with pytest.raises(WeightsFormatError, match=r"unexpected \(\d+\): net.visual_encoder"):
        navzoo.load(saved)


def test_non_finite_weights_are_refused_naming_the_tensor(tmp_path):
    policy = navzoo.create_model("pointnav-blind", hidden_size=16)
    with torch.no_grad():
        policy.critic.fc.weight[0, 3] = float("nan")
    folder = save_pretrained(policy, tmp_path / "nan")
    with pytest.raises(
        WeightsFormatError, match=r"NaN or infinite values in 1 tensor\(s\): critic\.fc\.weight"
    ):
        navzoo.load(folder)


def test_half_precision_export_keeps_values_float16_cannot_hold(tmp_path):
    policy = navzoo.create_model("bps-se-resnet9-rgb", resolution=(64, 64), hidden_size=16, base_planes=16)
    count = policy.net.visual_encoder.running_mean_and_var._count
    count.fill_(3_915_584.0)  # frames seen by the running statistics: past float16's 65504
    loaded = navzoo.load(save_pretrained(policy, tmp_path / "half", dtype=torch.float16))
    assert loaded.net.visual_encoder.running_mean_and_var._count.item() == 3_915_584.0
    assert loaded.net.visual_fc[1].weight.dtype == torch.float32  # cast back into the model's parameters
    for name in ("navzoo-pointnav-depth", "navzoo-pointnav-rgb", "navzoo-pointnav-blind"):  # all float16
        assert all(torch.isfinite(t).all() for t in navzoo.load(name).state_dict().values()), name


def test_broken_config_files_are_reported(saved):
    path = saved / CONFIG_NAME
    good = json.loads(path.read_text())
    cases = [
        ("{not json", "not valid JSON"),
        (json.dumps({"architecture": good["architecture"]}), "not a navzoo config"),
        (json.dumps({**good, "format_version": 99}), "upgrade navzoo"),
        (
            json.dumps({**good, "architecture": {**good["architecture"], "hidden_size": "big"}}),
            "invalid hidden_size",
        ),
        (json.dumps({**good, "architecture": {**good["architecture"], "depth": 3}}), "invalid architecture"),
    ]
    for text, message in cases:
        path.write_text(text)
        with pytest.raises(WeightsFormatError, match=message):
            navzoo.load(saved)
    path.unlink()
    with pytest.raises(WeightsFormatError, match=r"config\.json does not exist"):
        ActorCritic.from_folder(saved)
    path.write_text(json.dumps(good))
    (saved / WEIGHTS_NAME).unlink()
    with pytest.raises(WeightsFormatError, match=r"model\.safetensors does not exist"):
        navzoo.load(saved)


def hub_entry(name: str, repo_id: str) -> ModelEntry:
    """A zoo entry whose weights are a Hub repository (none of the built-in entries is one yet)."""
    config = model_entry("pointnav-blind").config.replace(hidden_size=16)
    return ModelEntry(name, config, "test entry", Provenance(paper="-", paper_url="-"), hub_repo=repo_id)


def test_loads_from_the_hf_cache_with_local_files_only(tmp_path, monkeypatch):
    monkeypatch.setitem(model_registry._REGISTRY, "hub-blind", hub_entry("hub-blind", "someone/blind"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert "hub-blind" in navzoo.list_models(pretrained=True)
    assert "hub-blind" not in navzoo.list_models(local=True)
    policy = navzoo.create_model("pointnav-blind", hidden_size=16)
    put_in_hf_cache(tmp_path / "hub", "someone/blind", save_pretrained(policy, tmp_path / "w"), "a" * 40)
    assert "hub-blind" in navzoo.list_models(local=True)
    loaded = navzoo.load("hub-blind", cache_dir=tmp_path / "hub", local_files_only=True)
    assert loaded.name == "pointnav-blind" and loaded.provenance["original_file"].endswith("blind.pth")
    assert torch.equal(step(policy.eval()).value, step(loaded).value)
    with pytest.raises(WeightsNotAvailableError, match=r"revision|not in the Hugging Face cache"):
        navzoo.load("hub-blind", cache_dir=tmp_path / "hub", local_files_only=True, revision="b" * 40)
    with pytest.raises(ConfigError, match="not in a Hub repository"):
        navzoo.load("pointnav-blind", revision="v1")


def test_offline_loading_from_a_hf_cache_in_a_fresh_process(tmp_path):
    """HF_HUB_OFFLINE=1 is read when huggingface_hub is imported, so this runs in a fresh interpreter,
    with the Hub endpoint pointed at a closed local port as a second guard against network use."""
    cache = tmp_path / "hub"
    blind = navzoo.create_model("pointnav-blind", hidden_size=16)
    put_in_hf_cache(cache, "someone/blind", save_pretrained(blind, tmp_path / "blind"), "1" * 40)
    depth = navzoo.create_model("pointnav-resnet18", resolution=(32, 32), hidden_size=16)
    old = save_pretrained(depth, tmp_path / "v1")
    put_in_hf_cache(cache, "someone/custom", old, "2" * 40, refs=("v1",))
    with torch.no_grad():
        depth.critic.fc.bias.add_(1.0)
    put_in_hf_cache(cache, "someone/custom", save_pretrained(depth, tmp_path / "v2"), "3" * 40)

    script = textwrap.dedent(
        """
        import json, torch, navzoo
        from navzoo.errors import WeightsNotAvailableError
        from tests.zoo.test_zoo import hub_entry
        navzoo.zoo.registry.register_model(hub_entry("hub-blind", "someone/blind"))
        def value(p):
            obs = {"pointgoal_with_gps_compass": torch.ones(1, 2)}
            if p.config.resolution:
                obs["depth"] = torch.full((1, *p.config.resolution, 1), 0.5)
            args = (p.initial_state(1), torch.zeros(1, dtype=torch.long), torch.ones(1, dtype=torch.bool))
            with torch.no_grad():
                return p(obs, *args).value.item()
        out = {
            "blind": value(navzoo.load("hub-blind")),
            "main": value(navzoo.load("hf-hub:someone/custom")),
            "v1": value(navzoo.load("hf-hub:someone/custom@v1")),
            "v1_kw": value(navzoo.load("hf-hub:someone/custom", revision="v1")),
        }
        try:
            navzoo.load("pointnav-se-resnext101")
        except WeightsNotAvailableError as err:
            out["missing"] = str(err)
        print(json.dumps(out))
        """
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(tmp_path / "home"),
        "HF_ENDPOINT": "http://127.0.0.1:9",
        "NAVZOO_DDPPO_BASE_URL": "http://127.0.0.1:9/ddppo-models/",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),  # the repository root: tests.zoo.test_zoo
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])

    def value(policy):
        obs = {GOAL_SENSOR: torch.ones(1, 2)}
        if policy.config.resolution:
            obs["depth"] = torch.full((1, *policy.config.resolution, 1), 0.5)
        with torch.no_grad():
            args = (
                policy.initial_state(1),
                torch.zeros(1, dtype=torch.long),
                torch.ones(1, dtype=torch.bool),
            )
            return policy(obs, *args).value.item()

    assert out["blind"] == pytest.approx(value(blind.eval()), abs=1e-6)
    assert out["main"] == pytest.approx(value(depth.eval()), abs=1e-6)
    assert out["v1"] == out["v1_kw"] == pytest.approx(value(navzoo.load(old)), abs=1e-6)
    assert out["main"] != pytest.approx(out["v1"])
    message = out["missing"]
    assert "not in navzoo's cache" in message and "offline mode is on" in message
    assert "navzoo convert gibson-2plus-se-resneXt101-lstm1024.pth" in message and "navzoo pull" in message


def test_policy_config_must_describe_the_visual_input():
    with pytest.raises(ConfigError, match="invalid sensors"):
        PolicyConfig(backbone="resnet50", sensors=(GOAL_SENSOR,))
