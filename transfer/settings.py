"""The five transfer settings of DD-PPO section 6, built from a PointGoal policy.

The GPS+Compass goes away on Flee and Explore, so every setting's policy reads the base policy's cameras
only. What each one trains (everything else is frozen):

    scratch              everything, from a fresh initialisation of the base architecture
    imagenet-encoder     a policy from scratch on a frozen timm ImageNet encoder
    pointgoal-encoder    a policy from scratch on the frozen PointGoal visual encoder
    pointgoal-finetune   the PointGoal policy (goal embedding fed a fixed dummy goal, critic
                         re-initialised) on its frozen encoder
    neural-controller    a planner steering the frozen PointGoal policy through its goal input
"""

from __future__ import annotations

from navzoo.errors import ConfigError
from navzoo.models import (
    ActorCritic,
    ModelMetadata,
    NeuralControllerConfig,
    NeuralControllerPolicy,
    PointNavPolicy,
)
from navzoo.models.policy import CriticHead
from navzoo.names import SEEN_MAP
from navzoo.tasks import PointGoal
from navzoo.transfer.imagenet import load_imagenet_backbone
from navzoo.transfer.setting_names import SETTINGS, Setting, setting_id

__all__ = ["SETTINGS", "Setting", "build_setting", "check_base", "setting_id"]


def check_base(base: ActorCritic, source: str, setting: str | None = None) -> PointNavPolicy:
    """The base must be a PointGoal policy (it reads the GPS+Compass) with a camera: `setting` (or any
    setting, when None) builds on it."""
    if not isinstance(base, PointNavPolicy) or not base.config.has_goal:
        raise ConfigError(
            "--from", source, "a PointGoal policy (it reads the GPS+Compass), e.g. navzoo-pointnav-rgb"
        )
    if base.config.is_blind:
        # Without the GPS+Compass, which no setting keeps, a blind policy has no input left.
        why = (
            "a scratch run trains the base's architecture on its cameras"
            if setting == "scratch"
            else "the settings reuse or copy the base's visual encoder"
        )
        raise ConfigError(
            "--from",
            source,
            f"a PointGoal policy with a camera ({why}, and the blind base has none), e.g. "
            "navzoo-pointnav-depth or navzoo-pointnav-rgb",
        )
    if base.config.has_seen_map:
        # DD-PPO's transfer settings are defined for an encoder of cameras feeding a recurrent core.
        raise ConfigError(
            "--from",
            source,
            f"a PointGoal policy of cameras and GPS+Compass (this one also reads the {SEEN_MAP} sensor, "
            "which the transfer settings do not carry over), e.g. navzoo-pointnav-depth or "
            "navzoo-pointnav-rgb",
        )
    return base


def build_setting(
    setting: str,
    base: PointNavPolicy,
    *,
    dummy_goal: tuple[float, float] = (5.0, 0.0),
    imagenet_model: str = "resnet18",
    imagenet_weights: str | None = None,
    planner_hidden_size: int = 512,
    planner_layers: int = 2,
    task: str = PointGoal.name,
) -> tuple[ActorCritic, dict]:
    """The policy a setting trains, and what to record in the trained model's provenance beyond the
    arguments (where the ImageNet weights came from). Its config records `task` as the task it is trained
    for."""
    # The base's own weights are copied where a setting reuses them; nothing is fetched from timm.
    config = base.config.replace(timm_pretrained=False)
    trained_for = ModelMetadata(task=task)
    goal_free = config.replace(sensors=config.visual_sensors, metadata=trained_for)
    record: dict = {}
    if setting == "scratch":
        policy = PointNavPolicy(goal_free)
    elif setting == "imagenet-encoder":
        # Same cameras and input size as the PointGoal encoder; timm's own channel count and
        # normalisation. The encoder's compression layer has no ImageNet counterpart and stays frozen at
        # its random initialisation, so the whole encoder is a fixed feature extractor as in the paper. The
        # net is DD-PPO's (habitat's PointNavBaselineNet, a base's other layout, has the SimpleCNN only).
        imagenet = goal_free.replace(
            backbone=f"timm:{imagenet_model}", base_planes=None, normalize_visual_inputs=None, net="resnet"
        )
        policy = PointNavPolicy(imagenet)
        record["imagenet_weights"] = load_imagenet_backbone(policy, imagenet_weights)
        policy.freeze_visual_encoder()
    elif setting == "pointgoal-encoder":
        policy = PointNavPolicy(goal_free)
        encoder, base_encoder = policy.visual_encoder, base.visual_encoder
        assert encoder is not None and base_encoder is not None  # goal_free reads the base's cameras
        encoder.load_state_dict(base_encoder.state_dict())
        policy.freeze_visual_encoder()
    elif setting == "pointgoal-finetune":
        policy = PointNavPolicy(goal_free.replace(dummy_goal=dummy_goal))
        policy.load_state_dict(base.state_dict())  # the same names: the dummy goal is not a parameter
        policy.critic = CriticHead(config.hidden_size)  # re-initialised: PointGoal values mean nothing here
        policy.freeze_visual_encoder()
    elif setting == "neural-controller":
        controller = PointNavPolicy(config)
        controller.load_state_dict(base.state_dict())
        planner = NeuralControllerConfig(
            controller=config,
            hidden_size=planner_hidden_size,
            num_recurrent_layers=planner_layers,
            metadata=trained_for,
        )
        policy = NeuralControllerPolicy(planner, controller)
    else:
        raise ConfigError("setting", setting, tuple(SETTINGS))
    return policy, record
