"""Conversion of habitat-baselines checkpoints (released DD-PPO layout) to navzoo folders and back."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
import torch

import navzoo
from navzoo.cli.convert import register
from navzoo.errors import NavzooError, UnsafeCheckpointError, WeightsFormatError
from navzoo.models import GOAL_SENSOR, HABITAT_BACKBONES, PointNavPolicy, PolicyConfig
from navzoo.zoo.habitat_checkpoints import (
    convert_habitat_checkpoint,
    export_habitat_checkpoint,
    habitat_to_policy,
    infer_config,
    read_habitat_checkpoint,
)
from tests.models.test_models_habitat import as_habitat_reads, load_reference, randomize_, reference_forward
from tests.support import random_observations


@pytest.fixture(scope="module")
def ref():
    return load_reference()


pytestmark = pytest.mark.usefixtures("one_thread")


def released_checkpoint(
    ref,
    backbone: str | None,
    sensors: tuple[str, ...] = ("depth",),
    hidden: int = 512,
    resolution: int = 256,
    seed: int = 0,
) -> dict:
    """A checkpoint in the layout of the released DD-PPO files: {'state_dict': {'actor_critic.<name>': ...}},
    no config. Backbone weights come from habitat's own resnet.py; the other names and shapes are written
    out here from resnet_policy.py / rnn_state_encoder.py / policy.py."""
    gen = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen) * 0.05

    state = {}
    rnn_input = 32 + 32
    if backbone is not None:
        in_channels = sum(1 if s == "depth" else 3 for s in sensors)
        net = getattr(ref.resnet, backbone)(in_channels, 32, 16)
        randomize_(net, seed)
        state |= {f"net.visual_encoder.backbone.{k}": v for k, v in net.state_dict().items()}
        side = math.ceil(resolution // 2 / 32)
        channels = round(2048 / side**2)
        state["net.visual_encoder.compression.0.weight"] = rnd(channels, net.final_channels, 3, 3)
        state["net.visual_encoder.compression.1.weight"] = 1 + rnd(channels)
        state["net.visual_encoder.compression.1.bias"] = rnd(channels)
        state["net.visual_fc.1.weight"] = rnd(hidden, channels * side * side)
        state["net.visual_fc.1.bias"] = rnd(hidden)
        if "rgb" in sensors:
            state["net.visual_encoder.running_mean_and_var._mean"] = torch.rand(
                1, in_channels, 1, 1, generator=gen
            )
            state["net.visual_encoder.running_mean_and_var._var"] = torch.rand(
                1, in_channels, 1, 1, generator=gen
            )
            state["net.visual_encoder.running_mean_and_var._count"] = torch.tensor(1.0e9)
        rnn_input += hidden
    state["net.tgt_embeding.weight"], state["net.tgt_embeding.bias"] = rnd(32, 3), rnd(32)
    state["net.prev_action_embedding.weight"] = rnd(5, 32)
    for layer in range(2):
        state[f"net.state_encoder.rnn.weight_ih_l{layer}"] = rnd(
            4 * hidden, rnn_input if layer == 0 else hidden
        )
        state[f"net.state_encoder.rnn.weight_hh_l{layer}"] = rnd(4 * hidden, hidden)
        state[f"net.state_encoder.rnn.bias_ih_l{layer}"] = rnd(4 * hidden)
        state[f"net.state_encoder.rnn.bias_hh_l{layer}"] = rnd(4 * hidden)
    state["action_distribution.linear.weight"], state["action_distribution.linear.bias"] = (
        rnd(4, hidden),
        rnd(4),
    )
    state["critic.fc.weight"], state["critic.fc.bias"] = rnd(1, hidden), rnd(1)
    return {"state_dict": {f"actor_critic.{k}": v for k, v in state.items()}}


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="navzoo")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([str(a) for a in argv])
    return args.run(args)


def outputs(policy: PointNavPolicy, seed: int = 0):
    config, n = policy.config, 2
    gen = torch.Generator().manual_seed(seed)
    obs = random_observations(config, n, gen)
    hidden = torch.randn(n, *policy.hidden_state_shape, generator=gen)
    prev, masks = torch.tensor([3, 1]), torch.tensor([True, False])
    with torch.no_grad():
        out = policy(obs, hidden, prev, masks)
    return out, (obs, hidden, prev.view(n, 1), masks.view(n, 1))


RELEASED = {
    "gibson-2plus-se-resneXt101-lstm1024.pth": ("se_resneXt101", ("depth",), 1024, "pointnav-se-resnext101"),
    "gibson-2plus-mp3d-train-val-test-se-resneXt50-rgb.pth": (
        "se_resneXt50",
        ("rgb",),
        512,
        "pointnav-se-resnext50-rgb",
    ),
    "gibson-0plus-mp3d-train-val-test-blind.pth": (None, (), 512, "pointnav-blind"),
}


@pytest.mark.parametrize("filename", RELEASED)
def test_released_checkpoint_converts_loads_strictly_and_round_trips(ref, tmp_path, filename):
    backbone, sensors, hidden, zoo_name = RELEASED[filename]
    checkpoint = released_checkpoint(ref, backbone, sensors, hidden)
    src = tmp_path / filename
    # Files saved before torch 1.6 (as the 2020 release may be) use the legacy non-zip format: read both.
    torch.save(checkpoint, src, _use_new_zipfile_serialization=backbone is not None)

    assert cli("convert", src, tmp_path / "converted") == 0
    policy = navzoo.load(tmp_path / "converted")
    entry = navzoo.zoo.loader.model_entry(zoo_name)
    assert policy.config == entry.config and policy.name == zoo_name
    assert policy.provenance["original_file"] == filename and policy.provenance["val_spl"] is not None
    original = {k.removeprefix("actor_critic."): v for k, v in checkpoint["state_dict"].items()}
    assert policy.state_dict().keys() == original.keys()
    # The same tensors, but for the goal embedding's column on sin(-phi): navzoo's bearing has the other sign.
    mirrored = {k for k, v in original.items() if not torch.equal(policy.state_dict()[k], v)}
    assert mirrored == {"net.tgt_embeding.weight"}
    goal = original["net.tgt_embeding.weight"]
    assert torch.equal(policy.state_dict()["net.tgt_embeding.weight"], goal * torch.tensor([1.0, 1.0, -1.0]))

    before, inputs = outputs(habitat_to_policy(src))
    after, _ = outputs(policy)
    assert torch.equal(before.distribution.logits, after.distribution.logits)
    assert torch.equal(before.value, after.value) and torch.equal(before.hidden, after.hidden)
    # And both agree with habitat-baselines' own modules run on the original tensors.
    obs, *rest = inputs
    logits, value, hidden_state = reference_forward(
        ref, original, policy.config, as_habitat_reads(obs), *rest
    )
    torch.testing.assert_close(after.distribution.logits, torch.log_softmax(logits, -1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(after.value, value.squeeze(-1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(after.hidden, hidden_state, atol=1e-5, rtol=1e-5)

    # Back to habitat's layout: the same names and tensors as the released file.
    assert cli("convert", tmp_path / "converted", tmp_path / "back.pth") == 0
    back = torch.load(tmp_path / "back.pth", weights_only=True)
    assert back.keys() == {"state_dict"} and back["state_dict"].keys() == checkpoint["state_dict"].keys()
    assert all(torch.equal(back["state_dict"][k], v) for k, v in checkpoint["state_dict"].items())
    if backbone is not None:
        prefix = "actor_critic.net.visual_encoder.backbone."
        reference_backbone = getattr(ref.resnet, backbone)(
            len(sensors) * (3 if sensors == ("rgb",) else 1), 32, 16
        )
        reference_backbone.load_state_dict(
            {k[len(prefix) :]: v for k, v in back["state_dict"].items() if k.startswith(prefix)}, strict=True
        )


def test_inferred_architecture_matches_for_every_backbone():
    configs = [PolicyConfig(backbone=b, sensors=("depth", GOAL_SENSOR)) for b in HABITAT_BACKBONES]
    configs += [
        PolicyConfig(backbone="resnet18", sensors=("depth", "rgb", GOAL_SENSOR), resolution=(128, 128)),
        PolicyConfig(backbone="resnet50", sensors=("rgb", GOAL_SENSOR), hidden_size=256, rnn_type="GRU"),
        PolicyConfig(
            backbone="se_resneXt101", sensors=("depth", GOAL_SENSOR), hidden_size=1024, num_recurrent_layers=3
        ),
        PolicyConfig(backbone=None, sensors=(GOAL_SENSOR,), resolution=None, num_actions=6),
    ]
    for config in configs:
        assert infer_config(PointNavPolicy(config).state_dict()) == config


def test_resolution_flag_and_default(ref, tmp_path):
    torch.save(released_checkpoint(ref, "resnet18", hidden=32, resolution=64), tmp_path / "run.pth")
    assert habitat_to_policy(tmp_path / "run.pth").config.resolution == (64, 64)
    assert cli("convert", tmp_path / "run.pth", tmp_path / "out", "--resolution", "48", "60") == 0
    policy = navzoo.load(tmp_path / "out")
    assert policy.config.resolution == (48, 60)
    assert policy.name is None and policy.provenance["original_file"] == "run.pth"
    outputs(policy)  # runs at the requested size


def test_model_flag_takes_the_architecture_from_the_zoo(ref, tmp_path):
    torch.save(released_checkpoint(ref, "resnet50"), tmp_path / "renamed.pth")
    convert_habitat_checkpoint(tmp_path / "renamed.pth", tmp_path / "out", model="pointnav-resnet50")
    policy = navzoo.load(tmp_path / "out")
    assert policy.name == "pointnav-resnet50"
    assert policy.provenance["original_file"] == "gibson-2plus-resnet50.pth"
    with pytest.raises(
        WeightsFormatError, match=r"does not match the architecture 'se_resneXt50'.*wrong shape"
    ):
        habitat_to_policy(tmp_path / "renamed.pth", model="pointnav-se-resnext50")


def test_file_named_like_a_release_but_holding_another_model_borrows_nothing(ref, tmp_path):
    torch.save(released_checkpoint(ref, "resnet18", hidden=32), tmp_path / "gibson-2plus-resnet50.pth")
    policy = habitat_to_policy(tmp_path / "gibson-2plus-resnet50.pth")
    assert policy.config.backbone == "resnet18" and policy.name is None
    assert "val_spl" not in policy.provenance


class Payload:
    """Unpickling this would run Path.touch: a stand-in for arbitrary code in a checkpoint."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_pickled_code_is_refused_and_never_run(ref, tmp_path):
    checkpoint = released_checkpoint(ref, None, hidden=16)
    marker = tmp_path / "code-ran"
    checkpoint["config"] = Payload(marker)
    torch.save(checkpoint, tmp_path / "evil.pth")
    with pytest.raises(UnsafeCheckpointError, match=r"refused.*never"):
        read_habitat_checkpoint(tmp_path / "evil.pth")
    with pytest.raises(UnsafeCheckpointError):
        cli("convert", tmp_path / "evil.pth", tmp_path / "out")
    assert not marker.exists() and not (tmp_path / "out").exists()


class SystemPayload:
    """Unpickling this would run a shell command: the most dangerous kind of payload."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("payload", [Payload, SystemPayload])
@pytest.mark.parametrize("legacy", [False, True])
def test_every_refused_pickle_gets_the_same_message_and_no_advice_to_run_it(ref, tmp_path, payload, legacy):
    checkpoint = released_checkpoint(ref, None, hidden=16)
    marker = tmp_path / "code-ran"
    checkpoint["config"] = payload(marker)
    torch.save(checkpoint, tmp_path / "evil.pth", _use_new_zipfile_serialization=not legacy)
    with pytest.raises(UnsafeCheckpointError) as err:
        read_habitat_checkpoint(tmp_path / "evil.pth")
    message = str(err.value)
    assert "this file holds pickled objects other than tensors, which navzoo never unpickles" in message
    assert "weights_only" not in message and "trust" not in message
    assert not marker.exists()


def test_unreadable_checkpoints_raise_clear_errors(ref, tmp_path):
    torch.save(released_checkpoint(ref, None, hidden=16), tmp_path / "good.pth")
    data = (tmp_path / "good.pth").read_bytes()
    (tmp_path / "truncated.pth").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.pth").write_text("not a checkpoint")
    torch.save({"state_dict": {"a": 1}}, tmp_path / "no-tensors.pth")
    torch.save({"state_dict": {"actor_critic.encoder.weight": torch.zeros(2)}}, tmp_path / "other-model.pth")
    for name, message in [
        ("missing.pth", "does not exist"),
        ("truncated.pth", "truncated"),
        ("text.pth", "not a readable PyTorch checkpoint"),
        ("no-tensors.pth", "no state_dict of tensors"),
        ("other-model.pth", "not a PointNav policy"),
    ]:
        with pytest.raises(WeightsFormatError, match=message):
            habitat_to_policy(tmp_path / name)


def test_convert_does_not_overwrite_without_overwrite(ref, tmp_path, capsys):
    torch.save(released_checkpoint(ref, None, hidden=16), tmp_path / "blind.pth")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(NavzooError, match=r"holds files \(notes\.txt\).*--overwrite"):
        cli("convert", tmp_path / "blind.pth", tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]
    assert cli("convert", tmp_path / "blind.pth", tmp_path / "out", "--overwrite") == 0
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    navzoo.load(tmp_path / "out")
    (tmp_path / "back.pth").write_bytes(b"older file")
    with pytest.raises(NavzooError, match="it is a file"):
        cli("convert", tmp_path / "out", tmp_path / "back.pth")
    assert (tmp_path / "back.pth").read_bytes() == b"older file"


def test_only_habitat_architectures_export_to_habitat(tmp_path):
    policy = navzoo.create_model("bps-se-resnet9")
    with pytest.raises(NavzooError, match="no habitat-baselines counterpart"):
        export_habitat_checkpoint(policy, tmp_path / "x.pth")


def test_a_folder_converted_before_the_bearing_was_mirrored_is_named_when_loaded(ref, tmp_path, recwarn):
    src = tmp_path / "gibson-0plus-mp3d-train-val-test-blind.pth"
    torch.save(released_checkpoint(ref, None, (), 512), src)
    assert cli("convert", src, tmp_path / "now") == 0
    navzoo.load(tmp_path / "now")
    assert not [w for w in recwarn if "mirrored" in str(w.message)]
    # What a conversion made before the fix looks like: no mark in its provenance.
    config = json.loads((tmp_path / "now" / "config.json").read_text())
    del config["provenance"]["bearing_sign"]
    (tmp_path / "now" / "config.json").write_text(json.dumps(config))
    with pytest.warns(UserWarning, match=r"before navzoo mirrored the GPS\+Compass bearing.*navzoo convert"):
        navzoo.load(tmp_path / "now")
