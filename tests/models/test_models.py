"""The policy API (act, evaluate_actions, controller, frozen encoder), the encoders and config checks."""

from __future__ import annotations

import pytest
import torch

from navzoo.errors import ConfigError, ObservationError
from navzoo.models import (
    GOAL_SENSOR,
    VISUAL_FEATURES_KEY,
    ModelMetadata,
    NavigationPolicy,
    NeuralControllerConfig,
    NeuralControllerPolicy,
    PointNavPolicy,
    PolicyArchitecture,
    PolicyConfig,
)
from navzoo.models.se_resnet9 import FixupSEBasicBlock, SEResNet9
from tests.models.test_models_habitat_baseline import baseline

pytestmark = pytest.mark.usefixtures("one_thread")


SMALL = PolicyConfig(backbone="resnet18", sensors=("depth", GOAL_SENSOR), resolution=(64, 64), hidden_size=32)


def observations(config: PolicyConfig, lead: tuple[int, ...], seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    obs = {GOAL_SENSOR: torch.rand(*lead, 2, generator=gen) * 4}
    if "depth" in config.sensors:
        obs["depth"] = torch.rand(*lead, *config.resolution, 1, generator=gen)
    if "rgb" in config.sensors:
        obs["rgb"] = torch.randint(0, 256, (*lead, *config.resolution, 3), generator=gen, dtype=torch.uint8)
    return obs


@pytest.fixture(scope="module")
def policy() -> PointNavPolicy:
    torch.manual_seed(0)
    policy = PointNavPolicy(SMALL).eval()
    with torch.no_grad():  # larger head weights than the 0.01-gain init, so actions vary with the inputs
        policy.action_distribution.linear.weight.normal_(0, 1)
    return policy


def test_act_returns_actions_log_probs_values_and_state(policy):
    n = 4
    obs, hidden = observations(SMALL, (n,)), policy.initial_state(n)
    prev, masks = torch.zeros(n, dtype=torch.long), torch.zeros(n, dtype=torch.bool)
    with torch.no_grad():
        out = policy(obs, hidden, prev, masks)
        greedy = policy.act(obs, hidden, prev, masks, deterministic=True)
        sampled = policy.act(obs, hidden, prev, masks)
    assert greedy.action.shape == (n,) and greedy.action.dtype == torch.int64
    assert torch.equal(greedy.action, out.distribution.probs.argmax(-1))
    torch.testing.assert_close(greedy.log_prob, out.distribution.log_prob(greedy.action))
    torch.testing.assert_close(sampled.log_prob, out.distribution.log_prob(sampled.action))
    torch.testing.assert_close(greedy.value, out.value)
    assert greedy.value.shape == (n,) and greedy.hidden.shape == (n, 4, 32)
    assert not torch.equal(greedy.hidden, hidden)


def test_sampling_follows_the_distribution(policy):
    n = 2000
    obs = {k: v.expand(n, *v.shape[1:]) for k, v in observations(SMALL, (1,), seed=3).items()}
    args = (obs, policy.initial_state(n), torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.bool))
    with torch.no_grad():
        torch.manual_seed(1)
        result = policy.act(*args)
        probs = policy(*args).distribution.probs[0]
    assert probs.min() > 0.05  # a non-degenerate distribution, so the check below means something
    freq = torch.bincount(result.action, minlength=4).float() / n
    torch.testing.assert_close(freq, probs, atol=0.04, rtol=0)


def test_mask_resets_state_and_previous_action(policy):
    n = 3
    obs = observations(SMALL, (n,), seed=1)
    stale = torch.randn(n, *policy.hidden_state_shape)
    with torch.no_grad():
        reset = policy(obs, stale, torch.full((n,), 2), torch.zeros(n, dtype=torch.bool))
        fresh = policy(obs, policy.initial_state(n), torch.full((n,), 0), torch.zeros(n, dtype=torch.bool))
        kept = policy(obs, stale, torch.full((n,), 2), torch.ones(n, dtype=torch.bool))
    torch.testing.assert_close(reset.features, fresh.features)
    assert not torch.allclose(kept.features, fresh.features)


def test_evaluate_actions_equals_stepping_with_episode_resets(policy):
    t, n = 6, 3
    obs = observations(SMALL, (t, n), seed=2)
    masks = torch.ones(t, n, dtype=torch.bool)
    masks[0] = False
    masks[2, 1] = masks[4, 0] = masks[4, 2] = False
    prev = torch.randint(0, 4, (t, n))
    actions = torch.randint(0, 4, (t, n))
    hidden = torch.randn(n, *policy.hidden_state_shape)
    result = policy.evaluate_actions(obs, hidden, prev, masks, actions)
    state, log_probs, values, entropies = hidden, [], [], []
    with torch.no_grad():
        for i in range(t):
            out = policy({k: v[i] for k, v in obs.items()}, state, prev[i], masks[i])
            state = out.hidden
            log_probs.append(out.distribution.log_prob(actions[i]))
            values.append(out.value)
            entropies.append(out.distribution.entropy())
    torch.testing.assert_close(result.log_prob, torch.stack(log_probs), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(result.value, torch.stack(values), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(result.entropy, torch.stack(entropies), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(result.hidden, state, atol=1e-5, rtol=1e-5)
    (result.log_prob.sum() + result.value.sum()).backward()
    assert policy.net.visual_encoder.backbone.conv1[0].weight.grad is not None
    policy.zero_grad(set_to_none=True)


def test_controller_is_differentiable_in_the_goal(policy):
    n = 2
    obs = observations(SMALL, (n,))
    goal = torch.tensor([[2.0, 0.95, -0.3], [5.0, 0.5, 0.8]], requires_grad=True)
    out = policy.controller(
        goal, obs, policy.initial_state(n), torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.bool)
    )
    out.distribution.log_prob(torch.tensor([1, 2])).sum().backward()
    assert goal.grad is not None and goal.grad.abs().sum() > 0
    policy.zero_grad(set_to_none=True)


@pytest.mark.parametrize("net", ["resnet", "baseline"])
def test_the_controller_fed_a_reading_s_goal_vector_acts_as_the_policy_fed_the_reading(net):
    """The goal vector [rho, cos(-phi), sin(-phi)] stands for the reading (rho, phi) in both layouts: the
    embedded one, and PointNavBaselineNet's, which reads the angle back."""
    config = baseline(("depth",), hidden=16).replace(net=net)
    torch.manual_seed(0)
    policy = PointNavPolicy(config).eval()
    n = 6
    obs = observations(config, (n,))
    rho = torch.linspace(0.5, 9.0, n)
    phi = torch.tensor([-3.1, -2.0, -0.4, 0.0, 1.5, 3.1])
    obs[GOAL_SENSOR] = torch.stack([rho, phi], -1)
    goal = torch.stack([rho, torch.cos(-phi), torch.sin(-phi)], -1)
    state, prev, masks = policy.initial_state(n), torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=bool)
    with torch.no_grad():
        read = policy(obs, state, prev, masks).distribution.logits
        steered = policy.controller(goal, obs, state, prev, masks).distribution.logits
    torch.testing.assert_close(steered, read, atol=1e-5, rtol=1e-5)


def test_frozen_encoder_is_a_fixed_feature_extractor():
    config = PolicyConfig(
        backbone="resnet18", sensors=("rgb", GOAL_SENSOR), resolution=(64, 64), hidden_size=16
    )
    policy = PointNavPolicy(config)
    encoder = policy.freeze_visual_encoder()
    policy.train()
    assert not encoder.training and all(not p.requires_grad for p in encoder.parameters())
    obs = observations(config, (2,))
    before = encoder.running_mean_and_var._count.clone()
    features = policy.encode(obs)
    assert features.shape == (2, *encoder.output_shape) and not features.requires_grad
    out = policy(
        obs, policy.initial_state(2), torch.zeros(2, dtype=torch.long), torch.ones(2, dtype=torch.bool)
    )
    assert torch.equal(encoder.running_mean_and_var._count, before)  # statistics frozen too
    out.value.sum().backward()
    assert policy.net.visual_fc[1].weight.grad is not None
    # Precomputed features give the same outputs as the images they came from.
    with torch.no_grad():
        direct = policy(
            obs, policy.initial_state(2), torch.zeros(2, dtype=torch.long), torch.ones(2, dtype=torch.bool)
        )
        cached = policy(
            {GOAL_SENSOR: obs[GOAL_SENSOR], VISUAL_FEATURES_KEY: features},
            policy.initial_state(2),
            torch.zeros(2, dtype=torch.long),
            torch.ones(2, dtype=torch.bool),
        )
    torch.testing.assert_close(direct.value, cached.value)


def test_running_mean_var_learns_input_statistics_in_training():
    config = PolicyConfig(
        backbone="resnet18", sensors=("rgb", GOAL_SENSOR), resolution=(32, 32), hidden_size=16
    )
    policy = PointNavPolicy(config).train()
    obs = observations(config, (8,))
    policy(obs, policy.initial_state(8), torch.zeros(8, dtype=torch.long), torch.ones(8, dtype=torch.bool))
    running = policy.visual_encoder.running_mean_and_var
    pooled = torch.nn.functional.avg_pool2d(obs["rgb"].permute(0, 3, 1, 2).float() / 255, 2)
    torch.testing.assert_close(running._mean.flatten(), pooled.mean((0, 2, 3)))
    assert running._count.item() == 8


@pytest.mark.parametrize(
    ("resolution", "spatial"),
    [((64, 64), (1, 1)), ((120, 160), (2, 3)), ((256, 256), (4, 4)), ((30, 500), (1, 8))],
)
def test_habitat_encoder_works_at_any_resolution(resolution, spatial):
    config = SMALL.replace(resolution=resolution)
    policy = PointNavPolicy(config).eval()
    channels = round(2048 / (spatial[0] * spatial[1]))
    assert policy.visual_encoder.output_shape == (channels, *spatial)
    with torch.no_grad():
        assert policy.encode(observations(config, (1,))).shape == (1, channels, *spatial)


def test_se_resnet9_is_bps_shaped_and_fixup_initialised():
    config = PolicyConfig(backbone="se_resnet9", sensors=("depth", GOAL_SENSOR), resolution=(64, 64))
    assert (config.base_planes, config.input_avgpool, config.normalize_visual_inputs) == (64, False, False)
    policy = PointNavPolicy(config).eval()
    encoder = policy.visual_encoder
    assert encoder.output_shape == (256, 2, 2)  # ~1024 values, channels a multiple of 32 groups
    assert not any(isinstance(m, torch.nn.GroupNorm | torch.nn.BatchNorm2d) for m in policy.modules())
    blocks = [m for m in encoder.backbone.modules() if isinstance(m, FixupSEBasicBlock)]
    assert len(blocks) == 4 and all(b.se is not None for b in blocks)
    # Fixup: zero last conv, so at initialisation every block is relu(shortcut).
    x = torch.randn(2, 64, 16, 16)
    with torch.no_grad():
        assert torch.equal(blocks[0](x), torch.relu(x))
        torch.testing.assert_close(blocks[1](x), torch.relu(blocks[1].downsample(x)))
    # Stem: 4x4 space-to-depth then a 1x1 conv, so each output pixel sees exactly its 4x4 block.
    stem = SEResNet9(1).stem
    image = torch.zeros(1, 1, 8, 8)
    image[0, 0, 4:, :4] = 1
    touched = stem(image).abs().sum(1)[0] > 0
    assert touched.tolist() == [[False, False], [True, False]]
    assert policy.act(
        observations(config, (2,)),
        policy.initial_state(2),
        torch.zeros(2, dtype=torch.long),
        torch.ones(2, dtype=torch.bool),
    ).action.shape == (2,)


def test_timm_encoder_on_depth_rgb_and_rgbd():
    for sensors in (("depth",), ("rgb",), ("depth", "rgb")):
        config = PolicyConfig(
            backbone="timm:resnet18", sensors=(*sensors, GOAL_SENSOR), resolution=(64, 64), hidden_size=16
        )
        assert not config.normalize_visual_inputs  # ImageNet statistics instead of running mean/var
        policy = PointNavPolicy(config).eval()
        backbone = policy.visual_encoder.backbone
        assert backbone.model.conv1.in_channels == config.in_channels
        assert "net.visual_encoder.backbone.mean" not in policy.state_dict()
        if sensors == ("rgb",):
            torch.testing.assert_close(backbone.mean.flatten(), torch.tensor([0.485, 0.456, 0.406]))
        with torch.no_grad():
            assert policy.encode(observations(config, (2,))).shape == (2, *policy.visual_encoder.output_shape)


def test_blind_policy_has_no_visual_parameters():
    config = PolicyConfig(backbone=None, sensors=(GOAL_SENSOR,), resolution=None, hidden_size=16)
    policy = PointNavPolicy(config)
    assert not any(k.startswith(("net.visual_encoder", "net.visual_fc")) for k in policy.state_dict())
    assert policy.net.state_encoder.rnn.input_size == 64
    out = policy.act(
        {GOAL_SENSOR: torch.rand(2, 2)},
        policy.initial_state(2),
        torch.zeros(2, dtype=torch.long),
        torch.ones(2, dtype=torch.bool),
    )
    assert out.action.shape == (2,)
    with pytest.raises(ObservationError, match="blind"):
        policy.encode({})


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"backbone": "resnet34"}, "backbone"),
        ({"backbone": "timm:"}, "backbone"),
        ({"sensors": ("depth", "gps")}, "sensors"),
        ({"sensors": (GOAL_SENSOR,)}, "sensors"),
        ({"backbone": None}, "sensors"),
        ({"resolution": (1, 64)}, "resolution"),
        ({"backbone": "se_resnet9", "resolution": (66, 64)}, "resolution"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"rnn_type": "lstm"}, "rnn_type"),
        ({"timm_pretrained": True}, "timm_pretrained"),
    ],
)
def test_config_rejects_invalid_values(changes, field):
    with pytest.raises(ConfigError, match=f"invalid {field}="):
        SMALL.replace(**changes)


def test_config_round_trips_through_dict():
    config = PolicyConfig(
        backbone="se_resneXt101", sensors=["depth", GOAL_SENSOR], resolution=[256, 256], hidden_size=1024
    )
    assert PolicyConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="architecture"):
        PolicyConfig.from_dict({**config.to_dict(), "layers": 3})


BAD_INPUTS = {
    "missing sensor": (lambda o, h, a, m: ({GOAL_SENSOR: o[GOAL_SENSOR]}, h, a, m), "'depth' is missing"),
    "depth size": (lambda o, h, a, m: ({**o, "depth": o["depth"][:, :32]}, h, a, m), "'depth' must be float"),
    "depth dtype": (
        lambda o, h, a, m: ({**o, "depth": o["depth"].to(torch.uint8)}, h, a, m),
        "'depth' must be float",
    ),
    "depth layout": (
        lambda o, h, a, m: ({**o, "depth": o["depth"].permute(0, 3, 1, 2)}, h, a, m),
        r"\(2, 64, 64, 1\)",
    ),
    "goal shape": (lambda o, h, a, m: ({**o, GOAL_SENSOR: o[GOAL_SENSOR][:, :1]}, h, a, m), "rho, phi"),
    "hidden shape": (lambda o, h, a, m: (o, h[:, :2], a, m), "hidden must have shape"),
    "float actions": (lambda o, h, a, m: (o, h, a.float(), m), "prev_actions must be an integer"),
    "float masks": (lambda o, h, a, m: (o, h, a, m.float()), "masks must be a bool"),
    "batch mismatch": (lambda o, h, a, m: (o, h, a[:1], m[:1]), "hidden must have shape"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_errors(policy, case):
    corrupt, message = BAD_INPUTS[case]
    good = (
        observations(SMALL, (2,)),
        policy.initial_state(2),
        torch.zeros(2, dtype=torch.long),
        torch.ones(2, dtype=torch.bool),
    )
    policy.act(*good)
    with pytest.raises(ObservationError, match=message):
        policy.act(*corrupt(*good))


def test_rgb_must_be_uint8():
    config = PolicyConfig(
        backbone="resnet18", sensors=("rgb", GOAL_SENSOR), resolution=(32, 32), hidden_size=16
    )
    policy = PointNavPolicy(config)
    obs = observations(config, (1,))
    obs["rgb"] = obs["rgb"].float() / 255
    with pytest.raises(ObservationError, match="'rgb' must be uint8"):
        policy.act(
            obs, policy.initial_state(1), torch.zeros(1, dtype=torch.long), torch.ones(1, dtype=torch.bool)
        )


def test_evaluate_actions_rejects_mismatched_actions(policy):
    obs = observations(SMALL, (2, 2))
    masks = torch.ones(2, 2, dtype=torch.bool)
    with pytest.raises(ObservationError, match="evaluate_actions"):
        policy.evaluate_actions(
            obs, policy.initial_state(2), torch.zeros(2, 2, dtype=torch.long), masks, torch.zeros(2)
        )


def test_pointgoal_policy_and_neural_controller_implement_one_interface(policy):
    planner = NeuralControllerConfig(controller=SMALL, hidden_size=16, num_recurrent_layers=1)
    steered = NeuralControllerPolicy(planner)
    for model in (policy, steered):
        assert isinstance(model, NavigationPolicy) and isinstance(model.config, PolicyArchitecture)
    assert not isinstance(torch.nn.Linear(2, 2), NavigationPolicy)
    # The planner+controller system reads the controller's cameras only, and acts as the controller does.
    seen = steered.config
    assert (seen.sensors, seen.resolution, seen.backbone) == (("depth",), (64, 64), "resnet18")
    assert seen.num_actions == 4 and not seen.is_blind and not seen.has_goal and seen.hidden_size == 16


def test_metadata_are_part_of_the_config_but_not_of_the_architecture():
    metadata = ModelMetadata(name="mine", task="flee", provenance={"frames": 10})
    named = SMALL.replace(metadata=metadata)
    assert named == SMALL and hash(named) == hash(SMALL) and named.to_dict() == SMALL.to_dict()
    model = PointNavPolicy(named)
    assert (model.name, model.task, model.provenance) == ("mine", "flee", {"frames": 10})
    with pytest.raises(AttributeError):
        model.task = "explore"  # fixed when the model is built
    assert PointNavPolicy(SMALL).task == "pointnav" and PointNavPolicy(SMALL).name is None
    with pytest.raises(ConfigError, match="invalid task"):
        ModelMetadata(task="swim")
