"""Numerical equivalence with habitat-baselines, the reference implementation of DD-PPO's agent.

The habitat-baselines wheel is pure Python. Its package __init__ imports habitat (not installable
here), so the reference files are loaded by path from the installed distribution:
rl/ddppo/policy/resnet.py, running_mean_and_var.py and rl/models/simple_cnn.py need only torch (and
numpy); rl/models/rnn_state_encoder.py also imports common/tensor_dict.py (torch + numpy), which is
loaded by path too and registered under its package name while rnn_state_encoder.py is executed. The
policy-level glue of resnet_policy.py (which imports habitat) is transcribed in `reference_forward`
below, line for line.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from navzoo.models import GOAL_SENSOR, HABITAT_BACKBONES, PointNavPolicy, PolicyConfig
from navzoo.models.resnet import GroupNormResNet
from navzoo.models.running_mean_var import RunningMeanAndVar

TOL = {"atol": 1e-5, "rtol": 1e-5}


def as_habitat_reads(observations: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The observations as habitat-lab's sensors give them at the same pose: the GPS+Compass bearing
    positive to the left, where navzoo's is positive to the right (navzoo.zoo.habitat_checkpoints)."""
    if GOAL_SENSOR not in observations:
        return observations
    goal = observations[GOAL_SENSOR]
    return {**observations, GOAL_SENSOR: torch.stack([goal[..., 0], -goal[..., 1]], -1)}


def _load_file(dist: importlib.metadata.Distribution, relative: str, name: str) -> ModuleType:
    path = Path(dist.locate_file(f"habitat_baselines/{relative}"))
    if not path.is_file():
        pytest.skip(f"habitat-baselines {dist.version} has no {relative}")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing look modules up by name while executing
    spec.loader.exec_module(module)
    return module


def load_reference() -> SimpleNamespace:
    """habitat-baselines' resnet, running mean/var and RNN state encoder modules, loaded by file path."""
    try:
        dist = importlib.metadata.distribution("habitat-baselines")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("habitat-baselines is not installed (pip install -e '.[test]'); it is the reference")
    resnet = _load_file(dist, "rl/ddppo/policy/resnet.py", "_hb_ref_resnet")
    running = _load_file(dist, "rl/ddppo/policy/running_mean_and_var.py", "_hb_ref_running_mean_and_var")
    simple_cnn = _load_file(dist, "rl/models/simple_cnn.py", "_hb_ref_simple_cnn")
    tensor_dict = _load_file(dist, "common/tensor_dict.py", "_hb_ref_tensor_dict")
    key = "habitat_baselines.common.tensor_dict"
    previous = sys.modules.get(key)
    sys.modules[key] = tensor_dict
    try:
        rnn = _load_file(dist, "rl/models/rnn_state_encoder.py", "_hb_ref_rnn_state_encoder")
    finally:
        if previous is None:
            del sys.modules[key]
        else:
            sys.modules[key] = previous
    return SimpleNamespace(
        resnet=resnet, running=running, simple_cnn=simple_cnn, rnn=rnn, version=dist.version
    )


@pytest.fixture(scope="module")
def ref() -> SimpleNamespace:
    return load_reference()


pytestmark = pytest.mark.usefixtures("one_thread")


def randomize_(module: torch.nn.Module, seed: int) -> None:
    """Perturb every parameter (GroupNorm affine included) so that a wrong mapping cannot go unnoticed.

    Scales stay close to the initial ones: activations that shrink to subnormal floats make CPU
    convolutions orders of magnitude slower.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in module.parameters():
            noise = torch.rand(param.shape, generator=gen)
            param.mul_(0.5 + noise).add_(0.1 * (torch.rand(param.shape, generator=gen) - 0.5))


def _sub(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


@pytest.mark.parametrize("name", HABITAT_BACKBONES)
def test_backbone_weights_and_outputs_match_reference_both_ways(ref, name):
    in_channels = {"resnet18": 4, "resnet50": 1, "resneXt50": 3}.get(name, 1)
    theirs = getattr(ref.resnet, name)(in_channels, 32, 16).eval()
    ours = GroupNormResNet(name, in_channels, 32).eval()
    assert [(k, v.shape) for k, v in ours.state_dict().items()] == [
        (k, v.shape) for k, v in theirs.state_dict().items()
    ]
    assert ours.final_channels == theirs.final_channels

    randomize_(theirs, seed=1)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    randomize_(ours, seed=2)
    copy_back = getattr(ref.resnet, name)(in_channels, 32, 16).eval()
    copy_back.load_state_dict(ours.state_dict(), strict=True)
    theirs.load_state_dict(ours.state_dict(), strict=True)

    for size in ((64, 64), (72, 100)):
        x = torch.rand(2, in_channels, *size)
        with torch.no_grad():
            expected = theirs(x)
            torch.testing.assert_close(ours(x), expected, **TOL)
            torch.testing.assert_close(copy_back(x), expected, **TOL)
        assert expected.shape[-2:] == GroupNormResNet.output_size(size)


@pytest.mark.parametrize(("sensors", "size"), [(("depth",), (64, 64)), (("depth", "rgb"), (72, 100))])
def test_simple_cnn_encoder_matches_habitat_simple_cnn(ref, sensors, size):
    """navzoo's SimpleCNN backbone followed by the policy's visual_fc is habitat's SimpleCNN, weight for
    weight: its convolutions are cnn.0/2/4 in both, habitat's Linear (cnn.6) is navzoo's visual_fc.1."""
    config = PolicyConfig(backbone="simple_cnn", sensors=(*sensors, GOAL_SENSOR), resolution=size)
    ours = PointNavPolicy(config).eval()
    channels = {"depth": 1, "rgb": 3}
    space = SimpleNamespace(spaces={s: SimpleNamespace(shape=(*size, channels[s])) for s in sensors})
    theirs = ref.simple_cnn.SimpleCNN(space, config.hidden_size).eval()
    randomize_(ours, seed=3)
    state = _sub(ours.state_dict(), "net.visual_encoder.backbone.")
    state.update({f"cnn.6.{k}": v for k, v in _sub(ours.state_dict(), "net.visual_fc.1.").items()})
    theirs.load_state_dict(state, strict=True)
    observations = {"depth": torch.rand(2, *size, 1)}
    if "rgb" in sensors:
        observations["rgb"] = torch.randint(0, 256, (2, *size, 3), dtype=torch.uint8)
    with torch.no_grad():
        mine = ours.net.visual_fc(ours.net.visual_encoder(observations))
        # habitat concatenates RGB before depth; navzoo depth first (see configuration.VISUAL_SENSORS).
        if "rgb" in sensors:
            conv = theirs.cnn[0]
            conv.weight.copy_(torch.cat([conv.weight[:, 1:], conv.weight[:, :1]], dim=1))
        torch.testing.assert_close(mine, theirs(observations), **TOL)


def test_running_mean_and_var_matches_reference(ref):
    theirs, ours = ref.running.RunningMeanAndVar(4), RunningMeanAndVar(4)
    assert list(theirs.state_dict()) == list(ours.state_dict())
    for scale in (1.0, 3.0, 0.5):
        x = torch.rand(3, 4, 8, 8) * scale + scale
        torch.testing.assert_close(ours.train()(x), theirs.train()(x), **TOL)
    for k, v in theirs.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[k], v, **TOL)
    x = torch.rand(2, 4, 8, 8)
    torch.testing.assert_close(ours.eval()(x), theirs.eval()(x), **TOL)


def reference_forward(ref, state, config, observations, hidden, prev_actions, masks):
    """resnet_policy.py's ResNetEncoder.forward + PointNavResNetNet.forward + NetPolicy heads, transcribed.

    Observations and actions are flattened [T*N, ...] with N = hidden.shape[0]; masks [T*N, 1] bool.
    Returns logits [T*N, A], values [T*N, 1] and the final hidden state [N, R, H].
    """
    x = []
    if not config.is_blind:
        # gym sorts a plain-dict observation space, so the channels come in key order: depth, rgb.
        cnn_input = []
        for k in sorted(s for s in config.sensors if s in ("depth", "rgb")):
            obs_k = observations[k].permute(0, 3, 1, 2)
            if k == "rgb":  # uint8 space: key_needs_rescaling = 1 / 255
                obs_k = obs_k.float() * (1.0 / 255)
            cnn_input.append(obs_k)
        v = F.avg_pool2d(torch.cat(cnn_input, dim=1), 2)
        if config.normalize_visual_inputs:
            running = ref.running.RunningMeanAndVar(v.shape[1])
            running.load_state_dict(_sub(state, "net.visual_encoder.running_mean_and_var."))
            v = running.eval()(v)
        backbone = getattr(ref.resnet, config.backbone)(v.shape[1], 32, 16)
        backbone.load_state_dict(_sub(state, "net.visual_encoder.backbone."))
        v = backbone.eval()(v)
        channels = state["net.visual_encoder.compression.0.weight"].shape[0]
        assert channels == round(2048 / math.prod(v.shape[-2:]))  # habitat's rule
        v = F.conv2d(v, state["net.visual_encoder.compression.0.weight"], padding=1)
        v = F.relu(
            F.group_norm(
                v,
                1,
                state["net.visual_encoder.compression.1.weight"],
                state["net.visual_encoder.compression.1.bias"],
            )
        )
        x.append(
            F.relu(F.linear(v.flatten(1), state["net.visual_fc.1.weight"], state["net.visual_fc.1.bias"]))
        )
    if GOAL_SENSOR in config.sensors:
        goal = observations[GOAL_SENSOR]
        goal = torch.stack([goal[:, 0], torch.cos(-goal[:, 1]), torch.sin(-goal[:, 1])], -1)
        x.append(F.linear(goal, state["net.tgt_embeding.weight"], state["net.tgt_embeding.bias"]))
    prev = prev_actions.squeeze(-1)
    prev = torch.where(masks.view(-1), prev + 1, torch.zeros_like(prev))
    x.append(F.embedding(prev, state["net.prev_action_embedding.weight"]))
    return recurrent_core_and_heads(ref, state, config, torch.cat(x, dim=1), hidden, masks)


def recurrent_core_and_heads(ref, state, config, x, hidden, masks):
    """habitat's RNN state encoder over the net's input `x` [T*N, D], then NetPolicy's heads: logits,
    values and the final hidden state, as `reference_forward` returns them."""
    encoder = ref.rnn.build_rnn_state_encoder(
        x.shape[1], config.hidden_size, config.rnn_type, config.num_recurrent_layers
    )
    encoder.load_state_dict(_sub(state, "net.state_encoder."), strict=True)
    n = hidden.shape[0]
    seq_info = None
    if x.shape[0] != n:
        dones = torch.logical_not(masks).view(-1, n).numpy()
        seq_info = ref.rnn.build_rnn_build_seq_info(
            torch.device("cpu"), ref.rnn.build_pack_info_from_dones(dones)
        )
    out, hidden = encoder(x, hidden, masks, seq_info)
    logits = F.linear(
        out, state["action_distribution.linear.weight"], state["action_distribution.linear.bias"]
    )
    return logits, F.linear(out, state["critic.fc.weight"], state["critic.fc.bias"]), hidden


CASES = {
    "rgbd-resnet18": PolicyConfig(
        backbone="resnet18", sensors=("depth", "rgb", GOAL_SENSOR), resolution=(64, 96), hidden_size=48
    ),
    "rgb-se_resneXt50": PolicyConfig(
        backbone="se_resneXt50", sensors=("rgb", GOAL_SENSOR), resolution=(64, 64), hidden_size=32
    ),
    "blind-gru": PolicyConfig(
        backbone=None,
        sensors=(GOAL_SENSOR,),
        resolution=None,
        hidden_size=24,
        rnn_type="GRU",
        num_recurrent_layers=1,
    ),
}


def _random_inputs(config, lead, seed):
    gen = torch.Generator().manual_seed(seed)
    obs = {
        GOAL_SENSOR: torch.rand(*lead, 2, generator=gen) * torch.tensor([5.0, 6.28])
        - torch.tensor([0.0, 3.14])
    }
    if "depth" in config.sensors:
        obs["depth"] = torch.rand(*lead, *config.resolution, 1, generator=gen)
    if "rgb" in config.sensors:
        obs["rgb"] = torch.randint(0, 256, (*lead, *config.resolution, 3), generator=gen, dtype=torch.uint8)
    prev = torch.randint(0, config.num_actions, lead, generator=gen)
    return obs, prev


def _prepared_policy(config, seed):
    policy = PointNavPolicy(config)
    randomize_(policy, seed)
    if config.normalize_visual_inputs:
        running = policy.visual_encoder.running_mean_and_var
        running._mean.uniform_(0.2, 0.6)
        running._var.uniform_(0.005, 0.2)  # some below habitat's 1e-2 floor
        running._count.fill_(10.0)
    return policy.eval()


@pytest.mark.parametrize("case", CASES)
def test_policy_step_matches_reference(ref, case):
    config = CASES[case]
    policy = _prepared_policy(config, seed=3)
    n = 3
    obs, prev = _random_inputs(config, (n,), seed=4)
    hidden = torch.rand(n, *policy.hidden_state_shape) - 0.5
    masks = torch.tensor([True, False, True])
    with torch.no_grad():
        out = policy(obs, hidden, prev, masks)
        logits, value, ref_hidden = reference_forward(
            ref, policy.state_dict(), config, obs, hidden, prev.view(n, 1), masks.view(n, 1)
        )
    torch.testing.assert_close(out.distribution.logits, torch.log_softmax(logits, -1), **TOL)
    torch.testing.assert_close(out.value, value.squeeze(-1), **TOL)
    torch.testing.assert_close(out.hidden, ref_hidden, **TOL)


@pytest.mark.parametrize("case", ["rgbd-resnet18", "blind-gru"])
def test_evaluate_actions_matches_reference_packed_sequences(ref, case):
    config = CASES[case]
    policy = _prepared_policy(config, seed=5)
    t, n = 5, 3
    obs, prev = _random_inputs(config, (t, n), seed=6)
    masks = torch.ones(t, n, dtype=torch.bool)
    masks[0, 1] = masks[2, 0] = masks[3, 0] = masks[3, 2] = False  # episodes end inside the rollout
    actions = torch.randint(0, config.num_actions, (t, n))
    hidden = torch.rand(n, *policy.hidden_state_shape) - 0.5
    with torch.no_grad():
        result = policy.evaluate_actions(obs, hidden, prev, masks, actions)
        flat = {k: v.flatten(0, 1) for k, v in obs.items()}
        logits, value, ref_hidden = reference_forward(
            ref, policy.state_dict(), config, flat, hidden, prev.view(-1, 1), masks.view(-1, 1)
        )
    log_probs = torch.log_softmax(logits, -1).gather(1, actions.view(-1, 1)).view(t, n)
    torch.testing.assert_close(result.log_prob, log_probs, **TOL)
    torch.testing.assert_close(result.value, value.view(t, n), **TOL)
    torch.testing.assert_close(result.hidden, ref_hidden, **TOL)
