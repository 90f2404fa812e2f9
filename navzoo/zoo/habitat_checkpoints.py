"""Conversion between habitat-baselines checkpoints and navzoo's weight folders.

Released DD-PPO files hold `{"state_dict": {"actor_critic.<name>": tensor}}` and no configuration. They
are read with `torch.load(weights_only=True)` (anything that needs code to unpickle is refused), the
architecture is read off the tensor shapes (or taken from a zoo entry), and the weights are written as
config.json + model.safetensors. The reverse direction writes the same layout back, which
habitat-baselines loads into PointNavResNetPolicy with its usual `actor_critic.` stripping.

Policies of `PolicyConfig.net="baseline"` are habitat-baselines' PointNavBaselinePolicy (SimpleCNN and one
GRU layer), whose names differ from navzoo's in two places: the SimpleCNN's convolutions sit under
`net.visual_encoder.cnn` with the Linear layer as its seventh module (navzoo: `net.visual_fc`), and it
concatenates RGB before depth (navzoo: depth first), so an RGB-D first convolution has its input channels
reordered. `habitat_overrides` gives the habitat-baselines config settings that build the same policy.

navzoo's GPS+Compass bearing phi is positive to the agent's right; habitat-lab's PointGoal sensor returns it
positive to the left. Both directions of the conversion negate the weights that read phi (the goal
embedding's sin(-phi) column, or PointNavBaselineNet's GRU column on phi), so a converted policy takes the
same action at the same pose in either simulator.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import torch

from navzoo.errors import NavzooError, UnsafeCheckpointError, WeightsFormatError
from navzoo.models import ModelMetadata, PointNavPolicy, PolicyConfig
from navzoo.models.configuration import SENSOR_CHANNELS, VISUAL_SENSORS
from navzoo.models.resnet import SPECS
from navzoo.models.simple_cnn import LAYERS as SIMPLE_CNN_LAYERS
from navzoo.models.simple_cnn import SimpleCNN
from navzoo.models.weights import check_state_dict, save_pretrained
from navzoo.names import GOAL_SENSOR, SEEN_MAP
from navzoo.storage.torch_files import load_weights_only
from navzoo.zoo.registry import ModelEntry, entries, model_entry

PREFIX = "actor_critic."
# Training-only modules some habitat-baselines versions keep under actor_critic (auxiliary losses).
TRAINING_ONLY = ("aux_loss_modules.",)
BACKBONE = "net.visual_encoder.backbone."
SENSORS_BY_CHANNELS = {1: ("depth",), 3: ("rgb",), 4: ("depth", "rgb")}
# PointNavBaselinePolicy's SimpleCNN names -> navzoo's (its Linear layer is navzoo's visual_fc).
BASELINE_NAMES = {
    **{f"net.visual_encoder.cnn.{i}.": f"net.visual_encoder.backbone.cnn.{i}." for i in (0, 2, 4)},
    "net.visual_encoder.cnn.6.": "net.visual_fc.1.",
}
BASELINE_FIRST_CONV = "net.visual_encoder.cnn.0.weight"
GOAL_INPUTS = 2  # the GPS+Compass reading PointNavBaselineNet feeds its GRU: (rho, phi)
# In a converted policy's provenance: its weights read the bearing with navzoo's sign. Folders converted
# before the conversion mirrored it lack the mark, and navzoo.load warns about them.
BEARING_MARK = {"bearing_sign": "navzoo"}
SIMPLE_CNN_CHANNELS = SIMPLE_CNN_LAYERS[-1][0]
MAX_INFERRED_SIDE = 1024


def read_habitat_checkpoint(path: str | Path) -> dict[str, torch.Tensor]:
    """The policy's tensors from a habitat-baselines checkpoint, names without `actor_critic.`."""
    path = Path(path)
    if not path.is_file():
        raise WeightsFormatError(
            f"{path} does not exist; pass the path of a habitat-baselines .pth checkpoint"
        )
    try:
        checkpoint = load_weights_only(path)
    except UnsafeCheckpointError:
        raise
    except (RuntimeError, EOFError, KeyError, ValueError, OSError) as err:
        raise WeightsFormatError(
            f"{path} is not a readable PyTorch checkpoint, or it is truncated ({type(err).__name__}: {err})"
        ) from None
    state = checkpoint.get("state_dict", checkpoint) if isinstance(checkpoint, dict) else None
    if (
        not isinstance(state, dict)
        or not state
        or not all(isinstance(v, torch.Tensor) for v in state.values())
    ):
        raise WeightsFormatError(
            f"{path} has no state_dict of tensors; expected habitat-baselines' "
            "{'state_dict': {name: tensor}} layout"
        )
    if any(k.startswith(PREFIX) for k in state):
        state = {k[len(PREFIX) :]: v for k, v in state.items() if k.startswith(PREFIX)}
    return {k: v for k, v in state.items() if not k.startswith(TRAINING_ONLY)}


def infer_config(state: dict[str, torch.Tensor], resolution: tuple[int, int] | None = None) -> PolicyConfig:
    """Read the architecture off the tensor names and shapes of a PointNav policy state dict.

    The input size is not stored in a checkpoint: the result has the square size whose feature map
    matches the compression layer (256x256 for the released models); other sizes with the same feature
    map work with the same weights (`habitat_to_policy(..., resolution=)`). A PointNavBaselinePolicy's
    SimpleCNN fixes its input size more tightly: a non-square one is read with `resolution`, checked
    against its Linear layer.
    """
    rnn = "net.state_encoder.rnn.weight_hh_l{}"
    if rnn.format(0) not in state or "action_distribution.linear.weight" not in state:
        raise WeightsFormatError(
            "these tensors are not a PointNav policy (no net.state_encoder.rnn or action_distribution); "
            "navzoo converts habitat-baselines PointNavResNetPolicy and PointNavBaselinePolicy checkpoints"
        )
    w_hh = state[rnn.format(0)]
    hidden = w_hh.shape[1]
    common: dict[str, Any] = {
        "hidden_size": hidden,
        "rnn_type": {4: "LSTM", 3: "GRU"}.get(w_hh.shape[0] // hidden, "unknown"),
        "num_recurrent_layers": sum(1 for i in range(16) if rnn.format(i) in state),
        "num_actions": state["action_distribution.linear.weight"].shape[0],
    }
    if "net.prev_action_embedding.weight" not in state:
        return _infer_baseline_config(state, common, resolution)
    goal = (GOAL_SENSOR,) if "net.tgt_embeding.weight" in state else ()
    if not any(k.startswith(BACKBONE) for k in state):
        return PolicyConfig(backbone=None, sensors=goal, resolution=None, **common)
    if BACKBONE + "conv1.0.weight" not in state:
        raise WeightsFormatError(
            "the visual backbone is not one of habitat's ResNets, so its architecture cannot be inferred; "
            "pass a zoo name with the same architecture (--model)"
        )
    stem = state[BACKBONE + "conv1.0.weight"]
    sensors = SENSORS_BY_CHANNELS.get(stem.shape[1])
    if sensors is None:
        raise WeightsFormatError(
            f"the backbone takes {stem.shape[1]} input channels; navzoo knows 1 (depth), 3 (rgb), 4"
        )
    backbone = _habitat_backbone(state)
    compression = state["net.visual_encoder.compression.0.weight"].shape[0]
    side = math.isqrt(state["net.visual_fc.1.weight"].shape[1] // compression)
    return PolicyConfig(
        backbone=backbone,
        sensors=sensors + goal,
        resolution=(64 * side, 64 * side),  # 2x2 avg-pool, then stride 32
        base_planes=stem.shape[0],
        normalize_visual_inputs="net.visual_encoder.running_mean_and_var._mean" in state,
        **common,
    )


def _infer_baseline_config(
    state: dict[str, torch.Tensor], common: dict[str, Any], resolution: tuple[int, int] | None
) -> PolicyConfig:
    """A PointNavBaselinePolicy's architecture: no previous-action embedding, a SimpleCNN or none."""
    if BASELINE_FIRST_CONV not in state:
        if state["net.state_encoder.rnn.weight_ih_l0"].shape[1] != GOAL_INPUTS:
            raise WeightsFormatError(
                "these tensors have no previous-action embedding and no SimpleCNN, and their recurrent "
                "input is not the GPS+Compass reading alone: not a PointNav policy navzoo knows"
            )
        return PolicyConfig(backbone=None, sensors=(GOAL_SENSOR,), resolution=None, net="baseline", **common)
    channels = state[BASELINE_FIRST_CONV].shape[1]
    sensors = SENSORS_BY_CHANNELS.get(channels)
    if sensors is None:
        raise WeightsFormatError(
            f"the SimpleCNN takes {channels} input channels; navzoo knows 1 (depth), 3 (rgb), 4"
        )
    cells = state["net.visual_encoder.cnn.6.weight"].shape[1] // SIMPLE_CNN_CHANNELS
    if resolution is None:
        side = _simple_cnn_side(cells)
        resolution = (side, side)
    elif math.prod(SimpleCNN.output_size(resolution)) != cells:
        raise WeightsFormatError(
            f"a {resolution[0]}x{resolution[1]} image leaves the SimpleCNN "
            f"{math.prod(SimpleCNN.output_size(resolution))} cells, and the checkpoint's Linear layer reads "
            f"{cells}: pass the camera size it was trained at"
        )
    return PolicyConfig(
        backbone="simple_cnn",
        sensors=(*sensors, GOAL_SENSOR),
        resolution=(int(resolution[0]), int(resolution[1])),
        net="baseline",
        **common,
    )


def _simple_cnn_side(cells: int) -> int:
    """The square input size whose SimpleCNN feature map has `cells` cells: a multiple of 32 where one
    fits (64, 128, 256, as habitat's sensors are set), else the smallest that fits."""
    sides = [s for s in range(36, MAX_INFERRED_SIDE) if math.prod(SimpleCNN.output_size((s, s))) == cells]
    if not sides:
        raise WeightsFormatError(
            f"no square image gives a SimpleCNN feature map of {cells} cells: pass the camera size it was "
            "trained at (`navzoo convert --resolution H W`)"
        )
    return next((s for s in sides if s % 32 == 0), sides[0])


def _habitat_backbone(state: dict[str, torch.Tensor]) -> str:
    layers = tuple(len({k.split(".")[0] for k in _under(state, f"{BACKBONE}layer{i}.")}) for i in range(1, 5))
    bottleneck = BACKBONE + "layer1.0.convs.6.weight" in state
    # ResNeXt: the first block's 3x3 conv is grouped, so its weight has fewer input than output channels.
    conv = state[BACKBONE + "layer1.0.convs.3.weight"] if bottleneck else None
    resnext = conv is not None and conv.shape[1] != conv.shape[0]
    se = BACKBONE + "layer1.0.se.excite.0.weight" in state
    for name, spec in SPECS.items():
        if (spec.bottleneck, spec.layers, spec.resnext, spec.se) == (bottleneck, layers, resnext, se):
            return name
    raise WeightsFormatError(
        f"backbone with stages {layers} (bottleneck={bottleneck}, grouped={resnext}, squeeze-excite={se}) "
        f"is not one of habitat's {', '.join(SPECS)}"
    )


def _under(state: dict[str, torch.Tensor], prefix: str) -> list[str]:
    return [k[len(prefix) :] for k in state if k.startswith(prefix)]


def habitat_to_policy(
    path: str | Path, *, model: str | None = None, resolution: tuple[int, int] | None = None
) -> PointNavPolicy:
    """A policy holding the weights of a habitat-baselines checkpoint.

    The architecture is inferred from the tensors, or taken from the zoo entry `model`. A file named
    like a released checkpoint gets that zoo entry's name and provenance when the tensors agree with it.
    """
    path = Path(path)
    state = read_habitat_checkpoint(path)
    if model:
        entry = model_entry(model)
        config = entry.config
    else:
        entry = _released_entry(path.name)
        config = infer_config(state, resolution)
        if entry is not None and config != entry.config:
            entry = None  # named like a released file but holds something else: no borrowed provenance
    if resolution is not None:
        config = config.replace(resolution=tuple(resolution))
    if entry is not None:
        metadata = entry.metadata
    else:
        metadata = ModelMetadata(
            provenance={"original_file": path.name, "converted_from": "habitat-baselines checkpoint"}
        )
    metadata = metadata.replace(provenance={**(metadata.provenance or {}), **BEARING_MARK})
    policy = PointNavPolicy(config.replace(metadata=metadata))
    if config.net == "baseline":
        state = _from_baseline_names(state, config)
    check_state_dict(policy, state, str(path))
    state = _mirrored_bearing(state, config)
    policy.load_state_dict(state, strict=True)
    return policy.eval()


def warn_if_mirrored(provenance: dict[str, Any] | None, folder: str | Path) -> None:
    """Warn when `folder` holds a habitat checkpoint converted before the conversion mirrored the bearing
    (no BEARING_MARK in its provenance): its agent turns the wrong way in navzoo."""
    if not provenance or "original_file" not in provenance:
        return
    if all(provenance.get(key) == value for key, value in BEARING_MARK.items()):
        return
    warnings.warn(
        f"{folder} was converted from habitat's {provenance['original_file']} before navzoo mirrored the "
        "GPS+Compass bearing (navzoo's is positive to the right, habitat's to the left), so it turns the "
        "wrong way here: convert the .pth again with `navzoo convert`",
        stacklevel=3,
    )


def _released_entry(filename: str) -> ModelEntry | None:
    return next((e for e in entries() if e.provenance.original_file == filename), None)


def convert_habitat_checkpoint(
    src: str | Path, dst: str | Path, *, model: str | None = None, resolution: tuple[int, int] | None = None
) -> Path:
    """Convert a habitat-baselines .pth into a navzoo folder (config.json + model.safetensors)."""
    return save_pretrained(habitat_to_policy(src, model=model, resolution=resolution), dst)


def habitat_policy(config: PolicyConfig) -> str:
    """The habitat-baselines policy class that builds this architecture from habitat-baselines' config
    (`habitat_overrides`): "PointNavResNetPolicy" or "PointNavBaselinePolicy". NavzooError naming what
    habitat could not build: its `from_config` fixes the ResNet width (base_planes 32), normalises RGB and
    nothing else, and feeds the GPS+Compass reading as the goal."""
    if config.has_seen_map:
        raise NavzooError(
            f"the policy reads the {SEEN_MAP} sensor, which habitat-baselines' policies have no input for; "
            "only policies of cameras and GPS+Compass can be exported"
        )
    if config.dummy_goal is not None:
        raise NavzooError(
            "the policy reads a fixed dummy goal (a Flee or Explore policy), which habitat-baselines' "
            "PointNav policies take from the GPS+Compass sensor instead; only PointGoal policies export"
        )
    if config.net == "baseline":
        if not config.has_goal:
            raise NavzooError(
                f"PointNavBaselinePolicy reads the goal from the GPS+Compass sensor ({GOAL_SENSOR}), which "
                "this policy does not read; only PointGoal policies export"
            )
        return "PointNavBaselinePolicy"
    if config.family not in ("habitat", "blind"):
        raise NavzooError(
            f"backbone {config.backbone!r} with net='resnet' has no habitat-baselines counterpart: "
            f"PointNavResNetPolicy has the ResNets {', '.join(SPECS)}; a simple_cnn policy trained with "
            "policy.net=baseline exports as PointNavBaselinePolicy"
        )
    if config.family == "habitat":
        normalized = "rgb" in config.sensors
        if (config.base_planes, config.input_avgpool, config.normalize_visual_inputs) != (
            32,
            True,
            normalized,
        ):
            raise NavzooError(
                "habitat-baselines builds PointNavResNetPolicy with base_planes=32, its 2x2 input average "
                f"pool and input normalisation exactly when RGB is seen ({normalized}); this policy has "
                f"base_planes={config.base_planes}, input_avgpool={config.input_avgpool}, "
                f"normalize_visual_inputs={config.normalize_visual_inputs}"
            )
    return "PointNavResNetPolicy"


def policy_to_habitat_state_dict(policy: PointNavPolicy) -> dict[str, torch.Tensor]:
    """`actor_critic.`-prefixed tensors that habitat-baselines' `habitat_policy(config)` loads strictly."""
    config = policy.config
    habitat_policy(config)  # refuses what habitat-baselines could not build
    state = _mirrored_bearing({k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}, config)
    if config.net == "baseline":
        state = _to_baseline_names(state, config)
    return {PREFIX + k: v for k, v in state.items()}


def _mirrored_bearing(state: dict[str, torch.Tensor], config: PolicyConfig) -> dict[str, torch.Tensor]:
    """navzoo-named weights that read the GPS+Compass bearing with its sign flipped (navzoo's positive to the
    right, habitat's to the left; see the module docstring): the same policy for the other simulator's
    sensor. Its own inverse."""
    if not config.has_goal:
        return state
    if config.net == "baseline":  # the GRU reads [camera embedding, rho, phi]
        name, column = "net.state_encoder.rnn.weight_ih_l0", -1
    else:  # the goal embedding reads [rho, cos(-phi), sin(-phi)], and cos is even
        name, column = "net.tgt_embeding.weight", 2
    weight = state[name].clone()
    weight[:, column] = -weight[:, column]
    return {**state, name: weight}


def _to_baseline_names(state: dict[str, torch.Tensor], config: PolicyConfig) -> dict[str, torch.Tensor]:
    to_habitat = {ours: theirs for theirs, ours in BASELINE_NAMES.items()}
    renamed = {_renamed(k, to_habitat): v for k, v in state.items()}
    if BASELINE_FIRST_CONV in renamed:
        renamed[BASELINE_FIRST_CONV] = renamed[BASELINE_FIRST_CONV][:, _channel_order(config)]
    return renamed


def _from_baseline_names(state: dict[str, torch.Tensor], config: PolicyConfig) -> dict[str, torch.Tensor]:
    state = dict(state)
    if BASELINE_FIRST_CONV in state:
        inverse = torch.argsort(torch.tensor(_channel_order(config)))
        state[BASELINE_FIRST_CONV] = state[BASELINE_FIRST_CONV][:, inverse]
    return {_renamed(k, BASELINE_NAMES): v for k, v in state.items()}


def _renamed(name: str, prefixes: dict[str, str]) -> str:
    for old, new in prefixes.items():
        if name.startswith(old):
            return new + name[len(old) :]
    return name


def _channel_order(config: PolicyConfig) -> list[int]:
    """navzoo's input channels (depth, then RGB) in the order habitat's SimpleCNN stacks them (RGB, then
    depth)."""
    channels, start = {}, 0
    for sensor in config.visual_sensors:
        width = SENSOR_CHANNELS[sensor]
        channels[sensor] = list(range(start, start + width))
        start += width
    return [c for sensor in ("rgb", "depth") for c in channels.get(sensor, [])]


def habitat_overrides(config: PolicyConfig) -> list[str]:
    """habitat-baselines config overrides (Hydra syntax) that build the policy this architecture exports to,
    with the cameras it reads at the size it was trained at (the other sensor settings are habitat's
    defaults, as navzoo's are)."""
    overrides = [f"habitat_baselines.rl.policy.main_agent.name={habitat_policy(config)}"]
    if config.net == "resnet":
        overrides += [
            f"habitat_baselines.rl.ddppo.backbone={config.backbone or 'resnet50'}",
            f"habitat_baselines.rl.ddppo.rnn_type={config.rnn_type}",
            f"habitat_baselines.rl.ddppo.num_recurrent_layers={config.num_recurrent_layers}",
        ]
    overrides.append(f"habitat_baselines.rl.ppo.hidden_size={config.hidden_size}")
    # habitat's PointNav benchmarks give the agent RGB and depth: the cameras the policy lacks are deleted
    # (Hydra's ~), as its observation space decides which encoders habitat builds.
    for sensor in VISUAL_SENSORS:
        prefix = f"habitat.simulator.agents.main_agent.sim_sensors.{sensor}_sensor"
        if sensor not in config.visual_sensors:
            overrides.append(f"~{prefix}")
        elif config.resolution is not None:
            height, width = config.resolution
            overrides += [f"{prefix}.height={height}", f"{prefix}.width={width}"]
    return overrides


def habitat_override_lines(config: PolicyConfig) -> str:
    """habitat_overrides as the continuation lines of a shell command (each after a backslash, indented 4)."""
    return " \\\n    ".join(habitat_overrides(config))


def export_habitat_checkpoint(src: torch.nn.Module | str | Path, dst: str | Path) -> Path:
    """Write a navzoo PointGoal policy (or its folder) as a habitat-baselines checkpoint."""
    policy = PointNavPolicy.from_folder(src) if isinstance(src, (str, Path)) else src
    if not isinstance(policy, PointNavPolicy):
        raise NavzooError(
            f"{type(policy).__name__} has no habitat-baselines counterpart; only PointGoal policies "
            "(PointNavPolicy) export to habitat"
        )
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": policy_to_habitat_state_dict(policy)}, dst)
    return dst
