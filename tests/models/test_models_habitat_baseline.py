"""navzoo policies with `net="baseline"` are habitat-baselines' PointNavBaselinePolicy: exported with
`navzoo convert --to habitat`, they load strictly into habitat's own SimpleCNN and GRU state encoder
(loaded by path, see tests/models/test_models_habitat.py) and give the same logits within 1e-5; habitat's
checkpoints of that policy convert back.

PointNavBaselineNet's forward (policy.py, which imports habitat) is transcribed in `reference_forward`:
the SimpleCNN's embedding and the raw GPS+Compass reading, concatenated, into the GRU; the heads on its
output."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest
import torch

import navzoo
from navzoo.cli.convert import register
from navzoo.errors import ConfigError, NavzooError
from navzoo.models import GOAL_SENSOR, PointNavPolicy, PolicyConfig
from navzoo.models.weights import save_pretrained
from navzoo.zoo.habitat_checkpoints import (
    PREFIX,
    export_habitat_checkpoint,
    habitat_overrides,
    habitat_to_policy,
    infer_config,
    policy_to_habitat_state_dict,
)
from tests.models.test_models_habitat import (
    TOL,
    _sub,
    as_habitat_reads,
    load_reference,
    randomize_,
    recurrent_core_and_heads,
)

pytestmark = pytest.mark.usefixtures("one_thread")
CHANNELS = {"depth": 1, "rgb": 3}


@pytest.fixture(scope="module")
def ref() -> SimpleNamespace:
    return load_reference()


def baseline(sensors: tuple[str, ...], resolution=(64, 64), hidden: int = 48) -> PolicyConfig:
    return PolicyConfig(
        backbone="simple_cnn" if sensors else None,
        sensors=(*sensors, GOAL_SENSOR),
        resolution=resolution if sensors else None,
        hidden_size=hidden,
        rnn_type="GRU",
        num_recurrent_layers=1,
        net="baseline",
    )


CASES = {
    "depth": baseline(("depth",)),
    "rgb": baseline(("rgb",), (72, 96)),
    "rgbd": baseline(("depth", "rgb"), (64, 80)),
    "blind": baseline(()),
}


def reference_forward(ref, habitat_state, config, observations, hidden, masks):
    """PointNavBaselineNet.forward and the NetPolicy heads on habitat's names (no `actor_critic.`), for
    flattened [T*N, ...] observations with N = hidden.shape[0] and masks [T*N, 1] bool."""
    state = {k[len(PREFIX) :]: v for k, v in habitat_state.items()}
    x = []
    if not config.is_blind:
        space = SimpleNamespace(
            spaces={
                s: SimpleNamespace(shape=(*config.resolution, CHANNELS[s])) for s in config.visual_sensors
            }
        )
        cnn = ref.simple_cnn.SimpleCNN(space, config.hidden_size)
        cnn.load_state_dict(_sub(state, "net.visual_encoder."), strict=True)
        x.append(cnn.eval()(observations))
    x.append(observations[GOAL_SENSOR])
    # PointNavBaselineNet's state encoder: build_rnn_state_encoder's defaults, one GRU layer (config's)
    return recurrent_core_and_heads(ref, state, config, torch.cat(x, dim=1), hidden, masks)


def random_inputs(config, lead, seed):
    gen = torch.Generator().manual_seed(seed)
    obs = {
        GOAL_SENSOR: torch.rand(*lead, 2, generator=gen) * torch.tensor([5.0, 6.28])
        - torch.tensor([0.0, 3.14])
    }
    if "depth" in config.sensors:
        obs["depth"] = torch.rand(*lead, *config.resolution, 1, generator=gen)
    if "rgb" in config.sensors:
        obs["rgb"] = torch.randint(0, 256, (*lead, *config.resolution, 3), generator=gen, dtype=torch.uint8)
    return obs, torch.randint(0, config.num_actions, lead, generator=gen)


def prepared(config, seed) -> PointNavPolicy:
    policy = PointNavPolicy(config)
    randomize_(policy, seed)
    return policy.eval()


@pytest.mark.parametrize("case", CASES)
def test_an_exported_baseline_policy_steps_as_habitat_s_own(ref, case):
    config = CASES[case]
    policy = prepared(config, seed=3)
    habitat_state = policy_to_habitat_state_dict(policy)
    assert not any(k.startswith(f"{PREFIX}net.visual_fc") for k in habitat_state)
    n = 3
    obs, prev = random_inputs(config, (n,), seed=4)
    hidden = torch.rand(n, *policy.hidden_state_shape) - 0.5
    masks = torch.tensor([True, False, True])
    with torch.no_grad():
        out = policy(obs, hidden, prev, masks)
        logits, value, ref_hidden = reference_forward(
            ref, habitat_state, config, as_habitat_reads(obs), hidden, masks.view(n, 1)
        )
    torch.testing.assert_close(out.distribution.logits, torch.log_softmax(logits, -1), **TOL)
    torch.testing.assert_close(out.value, value.squeeze(-1), **TOL)
    torch.testing.assert_close(out.hidden, ref_hidden, **TOL)


@pytest.mark.parametrize("case", ["rgbd", "blind"])
def test_packed_sequences_match_habitat(ref, case):
    config = CASES[case]
    policy = prepared(config, seed=5)
    t, n = 5, 3
    obs, prev = random_inputs(config, (t, n), seed=6)
    masks = torch.ones(t, n, dtype=torch.bool)
    masks[0, 1] = masks[2, 0] = masks[3, 2] = False
    actions = torch.randint(0, config.num_actions, (t, n))
    hidden = torch.rand(n, *policy.hidden_state_shape) - 0.5
    with torch.no_grad():
        result = policy.evaluate_actions(obs, hidden, prev, masks, actions)
        flat = as_habitat_reads({k: v.flatten(0, 1) for k, v in obs.items()})
        logits, value, ref_hidden = reference_forward(
            ref, policy_to_habitat_state_dict(policy), config, flat, hidden, masks.view(-1, 1)
        )
    log_probs = torch.log_softmax(logits, -1).gather(1, actions.view(-1, 1)).view(t, n)
    torch.testing.assert_close(result.log_prob, log_probs, **TOL)
    torch.testing.assert_close(result.value, value.view(t, n), **TOL)
    torch.testing.assert_close(result.hidden, ref_hidden, **TOL)


def cli(*argv) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["convert", *map(str, argv)])
    return args.run(args)


@pytest.mark.parametrize("case", ["depth", "rgbd", "blind"])
def test_convert_to_habitat_and_back_round_trips(case, tmp_path, capsys):
    config = CASES[case]
    if config.resolution is not None:
        config = config.replace(resolution=(128, 128))  # the size inference reads back
    policy = prepared(config, seed=7)
    save_pretrained(policy, tmp_path / "model")
    assert cli(tmp_path / "model", tmp_path / "model.pth", "--to", "habitat") == 0
    printed = capsys.readouterr().out
    assert "habitat_baselines.rl.policy.main_agent.name=PointNavBaselinePolicy" in printed
    state = torch.load(tmp_path / "model.pth", weights_only=True)["state_dict"]
    assert infer_config({k[len(PREFIX) :]: v for k, v in state.items()}) == config
    back = habitat_to_policy(tmp_path / "model.pth")
    for name, tensor in policy.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), name
    assert cli(tmp_path / "model.pth", tmp_path / "again", "--to", "navzoo") == 0
    assert navzoo.load(tmp_path / "again").config == config


def test_overrides_name_the_policy_its_size_and_camera():
    assert habitat_overrides(CASES["rgbd"]) == [
        "habitat_baselines.rl.policy.main_agent.name=PointNavBaselinePolicy",
        "habitat_baselines.rl.ppo.hidden_size=48",
        "habitat.simulator.agents.main_agent.sim_sensors.depth_sensor.height=64",
        "habitat.simulator.agents.main_agent.sim_sensors.depth_sensor.width=80",
        "habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor.height=64",
        "habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor.width=80",
    ]
    resnet = habitat_overrides(PolicyConfig(backbone="resnet18", resolution=(128, 128)))
    assert "habitat_baselines.rl.ddppo.backbone=resnet18" in resnet
    assert "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor" in resnet  # a depth-only policy
    blind = habitat_overrides(CASES["blind"])
    assert [o for o in blind if "sim_sensors" in o] == [
        "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
        "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
    ]


def test_a_simple_cnn_with_the_resnet_net_is_refused_naming_the_fix(tmp_path):
    policy = PointNavPolicy(PolicyConfig(backbone="simple_cnn", resolution=(64, 64)))
    with pytest.raises(NavzooError, match=r"policy\.net=baseline exports as PointNavBaselinePolicy"):
        export_habitat_checkpoint(policy, tmp_path / "x.pth")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"backbone": "resnet18", "resolution": (64, 64)}, "backbone"),
        ({"rnn_type": "LSTM"}, "rnn_type"),
        ({"num_recurrent_layers": 2}, "rnn_type"),
        ({"net": "lstm"}, "net"),
        ({"normalize_visual_inputs": True}, "normalize_visual_inputs"),
        ({"resolution": (32, 32)}, "resolution"),
        ({"backbone": None, "sensors": (), "resolution": None, "dummy_goal": (5.0, 0.0)}, "sensors"),
    ],
)
def test_baseline_configs_habitat_cannot_build_are_refused(changes, field):
    with pytest.raises(ConfigError, match=field):
        CASES["depth"].replace(**changes)


def test_a_goal_free_baseline_policy_runs_but_does_not_export(tmp_path):
    """Flee and Explore policies built from a baseline-layout agent read no goal, or a dummy one;
    PointNavBaselinePolicy reads the GPS+Compass, so they stay in navzoo."""
    goal_free = CASES["depth"].replace(sensors=("depth",))
    dummy = goal_free.replace(dummy_goal=(5.0, 0.0))
    for config, refusal in ((goal_free, "reads the goal from the GPS"), (dummy, "dummy goal")):
        policy = prepared(config, seed=10)
        obs, prev = random_inputs(config, (2,), seed=11)
        with torch.no_grad():
            policy({"depth": obs["depth"]}, policy.initial_state(2), prev, torch.ones(2, dtype=torch.bool))
        with pytest.raises(NavzooError, match=refusal):
            export_habitat_checkpoint(policy, tmp_path / "x.pth")


def test_the_model_card_says_how_to_run_it_in_habitat_lab():
    from navzoo.hub.card import _habitat_usage

    usage = _habitat_usage("me/depth", CASES["depth"])
    assert "navzoo convert hf-hub:me/depth model.pth --to habitat" in usage
    assert "habitat_baselines.rl.policy.main_agent.name=PointNavBaselinePolicy" in usage
    assert "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor" in usage
    assert _habitat_usage("me/x", PolicyConfig(backbone="simple_cnn", resolution=(64, 64))) == ""


def test_the_shipped_blind_agent_exports_to_habitat_s_resnet_policy(ref):
    """The blind zoo agent has PointNavResNetNet's layout: its habitat checkpoint steps as navzoo does."""
    from tests.models.test_models_habitat import reference_forward as resnet_forward

    policy = navzoo.load("navzoo-pointnav-blind").float().eval()
    state = {k[len(PREFIX) :]: v for k, v in policy_to_habitat_state_dict(policy).items()}
    n = 4
    obs, prev = random_inputs(policy.config, (n,), seed=8)
    hidden = torch.rand(n, *policy.hidden_state_shape) - 0.5
    masks = torch.tensor([True, False, True, True])
    with torch.no_grad():
        out = policy(obs, hidden, prev, masks)
        logits, _, _ = resnet_forward(
            ref, state, policy.config, as_habitat_reads(obs), hidden, prev.view(n, 1), masks.view(n, 1)
        )
    torch.testing.assert_close(out.distribution.logits, torch.log_softmax(logits, -1), **TOL)


def test_a_non_square_camera_converts_back_with_its_size(tmp_path, capsys):
    config = baseline(("depth",), (120, 160))
    policy = prepared(config, seed=9)
    save_pretrained(policy, tmp_path / "model")
    assert cli(tmp_path / "model", tmp_path / "model.pth") == 0  # a folder converts to habitat
    with pytest.raises(NavzooError, match=r"navzoo convert --resolution H W"):
        habitat_to_policy(tmp_path / "model.pth")
    with pytest.raises(NavzooError, match=r"a 64x64 image .* pass the camera size"):
        habitat_to_policy(tmp_path / "model.pth", resolution=(64, 64))
    assert cli(tmp_path / "model.pth", tmp_path / "back", "--resolution", "120", "160") == 0
    assert navzoo.load(tmp_path / "back").config == config


@pytest.mark.parametrize(
    ("config", "refusal"),
    [
        (PolicyConfig(backbone="resnet18", resolution=(64, 64), base_planes=8), "base_planes=32"),
        (PolicyConfig(backbone="resnet18", resolution=(64, 64), input_avgpool=False), "average pool"),
        (PolicyConfig(backbone=None, sensors=(), resolution=None, dummy_goal=(1.0, 0.0)), "dummy goal"),
    ],
)
def test_what_habitat_could_not_build_is_refused_with_the_reason(config, refusal, tmp_path):
    with pytest.raises(NavzooError, match=refusal):
        export_habitat_checkpoint(PointNavPolicy(config), tmp_path / "x.pth")


def test_convert_names_a_missing_checkpoint_and_refuses_reading_options_for_habitat(tmp_path, capsys):
    with pytest.raises(NavzooError, match=r"ckpt\.pth does not exist"):
        cli(tmp_path / "ckpt.pth", tmp_path / "out")
    with pytest.raises(NavzooError, match="leave them out with --to habitat"):
        cli("navzoo-pointnav-blind", tmp_path / "b.pth", "--model", "pointnav-blind")
