"""The zoo's registry: every named entry, and how a name finds its entry.

An entry pairs an architecture (PolicyConfig) with where its weights live and where they came from
(`ModelEntry.weights_source`):
- "package": navzoo's own agents, shipped inside the package;
- "habitat-release": the DD-PPO checkpoints released with habitat-baselines, registered under readable
  names and their habitat file names (fetched by navzoo.zoo.habitat_release);
- "hub": a navzoo model repository on the Hugging Face Hub (fetched by navzoo.storage.hf_hub).
Entries without weights are architectures to train from scratch or with timm's ImageNet encoders.

Nothing here fetches anything: turning an entry into a model folder is navzoo.zoo.loader's job.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from navzoo.errors import UnknownModelError
from navzoo.models.configuration import PolicyConfig
from navzoo.models.metadata import ModelMetadata, training_records
from navzoo.models.weights import read_config
from navzoo.names import GOAL_SENSOR

DDPPO_PAPER = (
    "Wijmans et al., DD-PPO: Learning Near-Perfect PointGoal Navigators from 2.5 Billion Frames, ICLR 2020"
)
DDPPO_URL = "https://arxiv.org/abs/1911.00357"
# habitat's release folder: one .pth per model, under the file names habitat-lab's DD-PPO README links.
DDPPO_RELEASE_URL = "https://dl.fbaipublicfiles.com/habitat/data/baselines/v1/ddppo/ddppo-models/"
BPS_PAPER = "Shacklett et al., Large Batch Simulation for Deep Reinforcement Learning, ICLR 2021"
BPS_URL = "https://arxiv.org/abs/2103.07013"
HABITAT_PAPER = "Savva et al., Habitat: A Platform for Embodied AI Research, ICCV 2019"
HABITAT_URL = "https://arxiv.org/abs/1904.01201"


@dataclass(frozen=True)
class Provenance:
    """Where a model comes from and what its authors reported (None where nothing was reported).

    SPL and success are on the Habitat Challenge 2019 PointGoal val and test-std splits.
    """

    paper: str
    paper_url: str
    original_file: str | None = None
    original_url: str | None = None
    training_data: str | None = None
    val_spl: float | None = None
    val_success: float | None = None
    test_spl: float | None = None
    test_success: float | None = None
    results_source: str | None = None
    notes: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PACKAGE, HABITAT_RELEASE, HUB = "package", "habitat-release", "hub"  # where an entry's weights come from


@dataclass(frozen=True)
class ModelEntry:
    name: str
    config: PolicyConfig
    description: str
    provenance: Provenance
    tags: tuple[str, ...] = field(default=())
    packaged: Path | None = None  # weights shipped inside the navzoo package: no download
    release_file: str | None = None  # file name in habitat's DD-PPO release folder
    hub_repo: str | None = None  # Hugging Face repository holding config.json + model.safetensors

    @property
    def weights_source(self) -> str | None:
        """PACKAGE, HABITAT_RELEASE or HUB; None for an architecture without weights of its own."""
        if self.packaged is not None:
            return PACKAGE
        if self.release_file is not None:
            return HABITAT_RELEASE
        return HUB if self.hub_repo is not None else None

    @property
    def metadata(self) -> ModelMetadata:
        """What a model of this entry is, where its weights do not say so themselves."""
        return ModelMetadata(name=self.name, provenance=self.provenance.to_dict())


_REGISTRY: dict[str, ModelEntry] = {}


def register_model(entry: ModelEntry) -> ModelEntry:
    if entry.name in _REGISTRY:
        raise ValueError(f"model {entry.name!r} is registered twice")
    _REGISTRY[entry.name] = entry
    return entry


def _depth(backbone: str | None, **kw: Any) -> PolicyConfig:
    return PolicyConfig(backbone=backbone, sensors=("depth", GOAL_SENSOR), **kw)


def _rgb(backbone: str | None, **kw: Any) -> PolicyConfig:
    return PolicyConfig(backbone=backbone, sensors=("rgb", GOAL_SENSOR), **kw)


def _released(
    name: str,
    config: PolicyConfig,
    description: str,
    original_file: str,
    training_data: str,
    results: tuple[float | None, float | None, float | None, float | None],
    results_source: str | None,
    notes: str | None = None,
) -> None:
    val_spl, val_success, test_spl, test_success = results
    provenance = Provenance(
        paper=DDPPO_PAPER,
        paper_url=DDPPO_URL,
        original_file=original_file,
        original_url=DDPPO_RELEASE_URL + original_file,
        training_data=training_data,
        val_spl=val_spl,
        val_success=val_success,
        test_spl=test_spl,
        test_success=test_success,
        results_source=results_source,
        notes=notes,
    )
    register_model(
        ModelEntry(name, config, description, provenance, ("dd-ppo", "released"), release_file=original_file)
    )


def _architecture(
    name: str, config: PolicyConfig, description: str, paper: str = DDPPO_PAPER, paper_url: str = DDPPO_URL
) -> None:
    provenance = Provenance(paper=paper, paper_url=paper_url)
    register_model(ModelEntry(name, config, description, provenance, ("architecture",)))


_TABLE1 = "DD-PPO paper Table 1; SPL also in habitat-baselines rl/ddppo/README.md"
_MP3D_CAUTION = (
    "Trained on Matterport3D train, val and test scenes (README: 'Caution: Trained on MP3D val and test')."
)

_released(
    "pointnav-resnet50-gibson4plus",
    _depth("resnet50"),
    "DD-PPO depth agent, ResNet50 + 2-layer LSTM512, trained on Gibson-4+",
    "gibson-4plus-resnet50.pth",
    "Gibson-4+",
    (0.922, 0.967, 0.917, 0.970),
    _TABLE1,
)
_released(
    "pointnav-resnet50-gibson4plus-mp3d",
    _depth("resnet50"),
    "DD-PPO depth agent, ResNet50 + 2-layer LSTM512, trained on Gibson-4+ and all of Matterport3D",
    "gibson-4plus-mp3d-train-val-test-resnet50.pth",
    "Gibson-4+ and Matterport3D (train/val/test)",
    (0.956, 0.996, 0.941, 0.996),
    _TABLE1,
    _MP3D_CAUTION,
)
_released(
    "pointnav-resnet50",
    _depth("resnet50"),
    "DD-PPO depth agent, ResNet50 + 2-layer LSTM512, trained on Gibson-2+",
    "gibson-2plus-resnet50.pth",
    "Gibson-2+",
    (0.956, 0.994, 0.944, 0.982),
    _TABLE1,
)
_released(
    "pointnav-se-resnext50",
    _depth("se_resneXt50"),
    "DD-PPO depth agent, SE-ResNeXt50 + 2-layer LSTM512, trained on Gibson-2+",
    "gibson-2plus-se-resneXt50.pth",
    "Gibson-2+",
    (0.959, 0.999, 0.943, 0.988),
    _TABLE1,
)
_released(
    "pointnav-se-resnext101",
    _depth("se_resneXt101", hidden_size=1024),
    "DD-PPO's best depth agent, SE-ResNeXt101 + 2-layer LSTM1024, trained on Gibson-2+",
    "gibson-2plus-se-resneXt101-lstm1024.pth",
    "Gibson-2+",
    (0.969, 0.997, 0.948, 0.980),
    _TABLE1,
)
_released(
    "pointnav-se-resnext101-lstm512",
    _depth("se_resneXt101"),
    "DD-PPO depth agent, SE-ResNeXt101 + 2-layer LSTM512, trained on Gibson-2+",
    "gibson-2plus-se-resneXt101.pth",
    "Gibson-2+",
    (None, None, None, None),
    None,
    "In the release folder without results of its own. Earlier versions of habitat-lab's DD-PPO README "
    "linked this file from the SE-ResNeXt50 row by mistake; that row's numbers are pointnav-se-resnext50's.",
)
_released(
    "pointnav-se-resnext50-rgb",
    _rgb("se_resneXt50"),
    "DD-PPO RGB agent, SE-ResNeXt50 + 2-layer LSTM512 with running mean/var input normalisation",
    "gibson-2plus-mp3d-train-val-test-se-resneXt50-rgb.pth",
    "Gibson-2+ and Matterport3D (train/val/test)",
    (0.929, 0.991, 0.920, 0.977),
    "DD-PPO paper Table 2 and Sec. 4",
    _MP3D_CAUTION + " habitat-baselines' README lists val SPL 0.933 for the released file.",
)
_released(
    "pointnav-se-resnext50-rgb-gibson2plus",
    _rgb("se_resneXt50"),
    "DD-PPO RGB agent, SE-ResNeXt50 + 2-layer LSTM512, trained on Gibson-2+ only",
    "gibson-2plus-se-resneXt50-rgb.pth",
    "Gibson-2+",
    (None, None, None, None),
    None,
    "In the release folder without results of its own; the README's RGB row is "
    "pointnav-se-resnext50-rgb (Gibson-2+ and Matterport3D).",
)
_released(
    "pointnav-blind",
    PolicyConfig(backbone=None, sensors=(GOAL_SENSOR,), resolution=None),
    "DD-PPO blind agent: GPS+Compass and previous action only, 2-layer LSTM512",
    "gibson-0plus-mp3d-train-val-test-blind.pth",
    "Gibson-0+ and Matterport3D (train/val/test)",
    (0.729, 0.973, 0.676, 0.947),
    "DD-PPO paper Table 2 (Blind, DD-PPO); SPL also in habitat-baselines rl/ddppo/README.md",
    _MP3D_CAUTION,
)

_architecture(
    "pointnav-resnet18", _depth("resnet18"), "half-width GroupNorm ResNet18 depth agent (habitat's default)"
)
_architecture("pointnav-resnext50", _depth("resneXt50"), "half-width GroupNorm ResNeXt50 depth agent")
_architecture("pointnav-se-resnet50", _depth("se_resnet50"), "half-width GroupNorm SE-ResNet50 depth agent")
_architecture(
    "pointnav-resnet50-rgbd",
    PolicyConfig(backbone="resnet50", sensors=("depth", "rgb", GOAL_SENSOR)),
    "ResNet50 RGB-D agent (channels depth, R, G, B; running mean/var normalisation)",
)
_architecture(
    "bps-se-resnet9",
    _depth("se_resnet9", resolution=(64, 64)),
    "BPS's SE-ResNet9 (SpaceToDepth stem, Fixup, no normalisation) depth agent at 64x64",
    BPS_PAPER,
    BPS_URL,
)
_architecture(
    "bps-se-resnet9-rgb",
    _rgb("se_resnet9", resolution=(64, 64)),
    "BPS's SE-ResNet9 RGB agent at 64x64",
    BPS_PAPER,
    BPS_URL,
)
_architecture(
    "pointnav-simple-cnn",
    _depth("simple_cnn", hidden_size=512, rnn_type="GRU", num_recurrent_layers=1),
    "habitat's SimpleCNN (PointNavBaselinePolicy's encoder: three convs) in the DD-PPO policy, GRU512",
    HABITAT_PAPER,
    HABITAT_URL,
)
for _timm_name, _sensors in (("resnet18", "depth"), ("resnet50", "depth"), ("resnet50", "rgb")):
    register_model(
        ModelEntry(
            f"pointnav-timm-{_timm_name}-{_sensors}",
            PolicyConfig(backbone=f"timm:{_timm_name}", sensors=(_sensors, GOAL_SENSOR)),
            f"timm {_timm_name} encoder on {_sensors} (ImageNet weights with pretrained=True), for transfer",
            Provenance(
                paper="timm (PyTorch Image Models)",
                paper_url="https://github.com/huggingface/pytorch-image-models",
            ),
            ("timm", "imagenet"),
        )
    )


# navzoo's own agents: trained with `navzoo train` (presets of the same names) on the embedded simulator's
# train split and shipped inside the package in half precision, so they load with no network at all.
PACKAGED_WEIGHTS = Path(__file__).parent / "weights"


def _shipped(name: str, description: str) -> None:
    folder = PACKAGED_WEIGHTS / name
    config, _ = read_config(folder)
    assert isinstance(config, PolicyConfig)  # navzoo ships PointGoal-style policies only
    record = config.metadata.provenance or {}
    # A run started from another's weights (init_from) counts that run's frames too, and so on down.
    runs = training_records(record)
    frames = sum(run.get("frames", 0) for run in runs)
    in_runs = f" in {len(runs)} runs, each started from the one before" if len(runs) > 1 else ""
    provenance = Provenance(
        paper=DDPPO_PAPER,
        paper_url=DDPPO_URL,
        training_data="navzoo's embedded simulator, train split (all scene families)",
        notes=f"`navzoo train {name}` for {frames:,} frames{in_runs}; evaluation in the README",
    )
    # The entry holds the architecture alone, as every other entry does; loading reads the file's metadata.
    architecture = config.replace(metadata=ModelMetadata())
    register_model(ModelEntry(name, architecture, description, provenance, ("navzoo", "shipped"), folder))


_shipped(
    "navzoo-pointnav-depth",
    "navzoo's depth agent: habitat's SimpleCNN on 64x64 depth + GRU512, imitating the map-planner, then "
    "DD-PPO kickstarted by it",
)
_shipped(
    "navzoo-pointnav-rgb",
    "navzoo's RGB agent: habitat's SimpleCNN on 64x64 RGB + GRU512, distilled from the depth agent, then "
    "DD-PPO kickstarted by it",
)
_shipped("navzoo-pointnav-blind", "navzoo's blind agent: GPS+Compass and the previous action, GRU256")


def entries() -> list[ModelEntry]:
    """Every registered entry, in registration order."""
    return list(_REGISTRY.values())


def model_entry(name: str) -> ModelEntry:
    """The entry registered as `name`, or the released entry of habitat's file name `name` (with or
    without .pth); UnknownModelError with close matches otherwise."""
    entry = find_entry(name)
    if entry is None:
        raise UnknownModelError(unknown_model_message(name))
    return entry


def find_entry(name: str) -> ModelEntry | None:
    """The entry `model_entry` finds, or None."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    stem = name.removesuffix(".pth")
    released = (
        e
        for e in _REGISTRY.values()
        if e.release_file is not None and e.release_file.removesuffix(".pth") == stem
    )
    return next(released, None)


def unknown_model_message(name: str) -> str:
    """Why `name` names no model, with the zoo names closest to it."""
    close = difflib.get_close_matches(name.lower(), _REGISTRY, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    return (
        f"unknown model {name!r}: it is not a zoo name, an existing local folder, or 'hf-hub:org/name'. "
        f"{hint}navzoo.list_models() shows the zoo."
    )
