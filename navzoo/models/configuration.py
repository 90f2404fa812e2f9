"""Architecture configuration of a PointGoal navigation policy (the `architecture` block of config.json)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from navzoo.config_base import Config
from navzoo.errors import ConfigError
from navzoo.models.metadata import ModelMetadata
from navzoo.names import GOAL_SENSOR, MAX_SEEN_MAP_SIZE, SEEN_MAP
from navzoo.typed_config import check_field_types

# Visual sensors in the order their channels are concatenated. habitat-baselines builds the encoder's
# observation space from a plain dict, which gym sorts by key, so depth comes before rgb.
VISUAL_SENSORS = ("depth", "rgb")
SENSOR_CHANNELS = {"depth": 1, "rgb": 3}
SENSORS = (*VISUAL_SENSORS, SEEN_MAP, GOAL_SENSOR)

# Backbones of habitat-baselines' rl/ddppo/policy/resnet.py (spelled as there, so configs read the same).
HABITAT_BACKBONES = ("resnet18", "resnet50", "resneXt50", "se_resnet50", "se_resneXt50", "se_resneXt101")
BPS_BACKBONES = ("se_resnet9",)
SIMPLE_BACKBONES = ("simple_cnn",)  # habitat-baselines' SimpleCNN (PointNavBaselinePolicy's encoder)
SIMPLE_CNN_MIN_SIDE = 36  # the smallest side its 8/4, 4/2 and 3/1 convolutions leave a pixel of
TIMM_PREFIX = "timm:"
RNN_TYPES = ("LSTM", "GRU")
# The habitat-baselines net a policy's recurrent core follows (`PolicyConfig.net`).
NETS = ("resnet", "baseline")
# Upper bounds on the sizes that decide memory, so a typo (or a hostile config.json) is refused before a
# model of terabytes is built. Each is far past any published navigation policy.
MAX_SIZES = {"hidden_size": 16384, "num_recurrent_layers": 16, "num_actions": 64, "base_planes": 1024}
MAX_RESOLUTION = 4096
MAP_DOWNSCALE = 8  # the seen_map encoder halves the map three times (navzoo.models.map_encoder)


def backbone_family(backbone: str | None) -> str:
    """'blind', 'habitat', 'bps', 'simple' or 'timm'."""
    if backbone is None:
        return "blind"
    if backbone in HABITAT_BACKBONES:
        return "habitat"
    if backbone in BPS_BACKBONES:
        return "bps"
    if backbone in SIMPLE_BACKBONES:
        return "simple"
    if backbone.startswith(TIMM_PREFIX) and len(backbone) > len(TIMM_PREFIX):
        return "timm"
    raise ConfigError(
        "backbone",
        backbone,
        f"one of {', '.join(HABITAT_BACKBONES + BPS_BACKBONES + SIMPLE_BACKBONES)}, "
        "'timm:<timm model name>' or None",
    )


@dataclass(frozen=True)
class PolicyConfig(Config):
    """Everything that fixes the parameter shapes and the input contract of a policy.

    `backbone=None` is the blind agent (no visual sensor). `net` names the habitat-baselines net whose
    layout the policy has: "resnet" is PointNavResNetNet (DD-PPO's: the goal embedded from [rho, cos(-phi),
    sin(-phi)] and the previous action embedded beside the camera's embedding), "baseline" is
    PointNavBaselineNet (PointNavBaselinePolicy's: the camera's embedding and the raw (rho, phi) into one
    GRU layer; SimpleCNN or blind). Fields left as None get the default of the
    backbone family in __post_init__, so a saved config always holds concrete values:
    `base_planes` 32 (habitat half width) or 64 (BPS SE-ResNet9), `input_avgpool` True except for the
    SE-ResNet9 and the SimpleCNN (fed at full resolution), `normalize_visual_inputs` True when RGB feeds a
    habitat or BPS backbone (habitat's running mean/var; timm encoders normalise with the ImageNet
    statistics instead, and habitat's SimpleCNN only rescales RGB to [0, 1]).
    """

    backbone: str | None = "resnet50"
    sensors: tuple[str, ...] = ("depth", GOAL_SENSOR)
    resolution: tuple[int, int] | None = (256, 256)
    hidden_size: int = 512
    rnn_type: str = "LSTM"
    num_recurrent_layers: int = 2
    num_actions: int = 4
    net: str = "resnet"  # "resnet" (PointNavResNetNet) or "baseline" (PointNavBaselineNet), see above
    base_planes: int | None = None
    input_avgpool: bool | None = None
    normalize_visual_inputs: bool | None = None
    timm_pretrained: bool = False
    # A fixed (rho, phi) fed to the goal input (embedded, or raw with net="baseline") in place of the
    # GPS+Compass sensor: how a PointGoal policy is fine-tuned for tasks without a goal (DD-PPO section 6,
    # footnote 7).
    dummy_goal: tuple[float, float] | None = None
    # The seen_map sensor's squares per side and their size in metres (SimConfig's fields), when the policy
    # reads it; None otherwise.
    seen_map_size: int | None = None
    seen_map_cell: float | None = None
    # Name, task and provenance: they change no parameter, so equal architectures compare equal without them.
    metadata: ModelMetadata = field(default_factory=ModelMetadata, compare=False, repr=False)

    def __post_init__(self):
        check_field_types(self)
        family = backbone_family(self.backbone)
        if self.base_planes is None:
            object.__setattr__(self, "base_planes", 64 if family == "bps" else 32)
        if self.input_avgpool is None:
            object.__setattr__(self, "input_avgpool", family in ("habitat", "timm"))
        if self.normalize_visual_inputs is None:
            normalized = "rgb" in self.sensors and family in ("habitat", "bps")
            object.__setattr__(self, "normalize_visual_inputs", normalized)
        self.validate()

    @property
    def family(self) -> str:
        return backbone_family(self.backbone)

    @property
    def visual_sensors(self) -> tuple[str, ...]:
        return tuple(s for s in VISUAL_SENSORS if s in self.sensors)

    @property
    def in_channels(self) -> int:
        return sum(SENSOR_CHANNELS[s] for s in self.visual_sensors)

    @property
    def has_seen_map(self) -> bool:
        """Whether the policy reads the seen_map sensor (navzoo.sim.map_sensor)."""
        return SEEN_MAP in self.sensors

    def without_seen_map(self) -> PolicyConfig:
        """The same architecture without the seen_map sensor (what navzoo.models.add_seen_map
        grows from)."""
        sensors = tuple(s for s in self.sensors if s != SEEN_MAP)
        return self.replace(sensors=sensors, seen_map_size=None, seen_map_cell=None)

    @property
    def is_blind(self) -> bool:
        return self.backbone is None

    @property
    def has_goal(self) -> bool:
        """Whether the policy reads the GPS+Compass sensor."""
        return GOAL_SENSOR in self.sensors

    @property
    def has_goal_embedding(self) -> bool:
        """Whether the policy has a goal input at all (the sensor, or a fixed dummy goal)."""
        return self.has_goal or self.dummy_goal is not None

    @property
    def recurrent_layers(self) -> int:
        """Rows of the recurrent state per environment: [h; c] per layer for an LSTM, h for a GRU."""
        return self.num_recurrent_layers * (2 if self.rnn_type == "LSTM" else 1)

    @property
    def encoder_resolution(self) -> tuple[int, int]:
        """Size of the image the backbone sees (after the optional 2x2 average pool)."""
        assert self.resolution is not None
        h, w = self.resolution
        return (h // 2, w // 2) if self.input_avgpool else (h, w)

    def validate(self) -> None:
        unknown = [s for s in self.sensors if s not in SENSORS]
        if unknown or len(set(self.sensors)) != len(self.sensors):
            raise ConfigError("sensors", self.sensors, f"distinct names from {', '.join(SENSORS)}")
        if self.is_blind != (not self.visual_sensors):
            raise ConfigError(
                "sensors",
                self.sensors,
                "depth and/or rgb when a backbone is set, none for the blind agent (backbone=None)",
            )
        if not self.visual_sensors and not self.has_goal_embedding:
            raise ConfigError("sensors", self.sensors, f"a visual sensor or {GOAL_SENSOR} (or a dummy_goal)")
        self._validate_seen_map()
        if self.dummy_goal is not None and self.has_goal:
            raise ConfigError("dummy_goal", self.dummy_goal, f"None when {GOAL_SENSOR} is among the sensors")
        if self.is_blind:
            if self.resolution is not None:
                raise ConfigError("resolution", self.resolution, "None for the blind agent")
        elif self.resolution is None or not all(2 <= v <= MAX_RESOLUTION for v in self.resolution):
            raise ConfigError(
                "resolution", self.resolution, f"(height, width), integers in 2 .. {MAX_RESOLUTION}"
            )
        if self.family == "simple" and min(self.encoder_resolution) < SIMPLE_CNN_MIN_SIDE:
            raise ConfigError(
                "resolution",
                self.resolution,
                f"at least {SIMPLE_CNN_MIN_SIDE} pixels a side for the SimpleCNN (its three convolutions "
                "leave nothing of a smaller image)",
            )
        if self.family == "bps" and any(v % 4 for v in self.encoder_resolution):
            raise ConfigError(
                "resolution", self.resolution, "a size the SpaceToDepth stem can split into 4x4 blocks"
            )
        for name, most in MAX_SIZES.items():
            if not 1 <= getattr(self, name) <= most:
                raise ConfigError(name, getattr(self, name), f"an integer in 1 .. {most}")
        assert self.base_planes is not None  # set by __post_init__ (and checked just above)
        if self.family == "habitat" and self.base_planes % 2:
            raise ConfigError(
                "base_planes", self.base_planes, "an even number (GroupNorm uses base_planes // 2)"
            )
        if self.rnn_type not in RNN_TYPES:
            raise ConfigError("rnn_type", self.rnn_type, RNN_TYPES)
        if self.timm_pretrained and self.family != "timm":
            raise ConfigError("timm_pretrained", True, "False unless the backbone is 'timm:<name>'")
        self._validate_net()

    def _validate_net(self) -> None:
        """PointNavBaselineNet has a SimpleCNN (or none), one GRU layer and the GPS+Compass reading only (or,
        for goal-free tasks, a dummy goal or none; habitat_policy refuses those for export)."""
        if self.net not in NETS:
            raise ConfigError("net", self.net, NETS)
        if self.net == "resnet":
            return
        if self.family not in ("simple", "blind"):
            raise ConfigError("backbone", self.backbone, "'simple_cnn' or None with net='baseline'")
        if (self.rnn_type, self.num_recurrent_layers) != ("GRU", 1):
            raise ConfigError(
                "rnn_type", self.rnn_type, "'GRU' with num_recurrent_layers=1 for net='baseline'"
            )
        if self.has_seen_map:
            raise ConfigError(
                "sensors", self.sensors, f"cameras and {GOAL_SENSOR} (no {SEEN_MAP}) for net='baseline'"
            )
        if self.is_blind and not self.has_goal:
            # without the previous action DD-PPO's net has, a dummy goal would be the core's only input
            raise ConfigError(
                "sensors", self.sensors, f"{GOAL_SENSOR} for a blind policy with net='baseline'"
            )
        if self.input_avgpool or self.normalize_visual_inputs:
            # habitat's SimpleCNN sees the images as they come: no pooling, RGB only rescaled to [0, 1]
            raise ConfigError(
                "input_avgpool/normalize_visual_inputs",
                (self.input_avgpool, self.normalize_visual_inputs),
                "False and False for net='baseline'",
            )

    def _validate_seen_map(self) -> None:
        if not self.has_seen_map:
            for name in ("seen_map_size", "seen_map_cell"):
                if getattr(self, name) is not None:
                    raise ConfigError(
                        name, getattr(self, name), f"None unless {SEEN_MAP} is among the sensors"
                    )
            return
        if self.is_blind:
            raise ConfigError(
                "sensors",
                self.sensors,
                f"no {SEEN_MAP} for a blind policy: the map is built from depth images",
            )
        if "depth" not in self.sensors:
            raise ConfigError(
                "sensors", self.sensors, f"depth as well: {SEEN_MAP} is a map of what depth shows"
            )
        size = self.seen_map_size
        if size is None or size % MAP_DOWNSCALE or not MAP_DOWNSCALE <= size <= MAX_SEEN_MAP_SIZE:
            raise ConfigError(
                "seen_map_size",
                size,
                f"a multiple of {MAP_DOWNSCALE} (the map encoder's stride) up to {MAX_SEEN_MAP_SIZE}",
            )
        if self.seen_map_cell is None or self.seen_map_cell <= 0:
            raise ConfigError("seen_map_cell", self.seen_map_cell, "the size of the map's squares in metres")

    @classmethod
    def from_dict(cls, data: Any, block: str = "architecture") -> PolicyConfig:
        # An architecture is read from config.json, so a wrong shape is named in JSON's words.
        if not isinstance(data, dict):
            raise ConfigError(block, data, "a JSON object with PolicyConfig fields")
        return super().from_dict(data, block)

    def to_dict(self) -> dict[str, Any]:
        """The architecture block of config.json; the metadata are written beside it."""
        return {k: v for k, v in super().to_dict().items() if k != "metadata"}


def compression_channels(flat_size: int, spatial: tuple[int, int], multiple: int = 1) -> int:
    """Channels of the compression conv so that channels * h * w is close to `flat_size`.

    habitat rounds 2048 / (h*w); BPS rounds 1024 / (h*w) to a multiple of its GroupNorm groups. At least
    one multiple is kept, so very large inputs still get a (wider than flat_size) feature vector.
    """
    return max(1, round(flat_size / math.prod(spatial) / multiple)) * multiple
