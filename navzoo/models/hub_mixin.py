"""The Hugging Face Hub methods of every navzoo policy: `save_pretrained`, `from_pretrained` and
`push_to_hub`, from huggingface_hub's ModelHubMixin (the convention PyTorchModelHubMixin, timm and LeRobot
users know), over navzoo's own weight format (navzoo.models.weights). A folder written here is one that
navzoo.load, `navzoo push` and the zoo read, and the other way round.

    policy.save_pretrained("my-agent")                    # config.json, model.safetensors, README.md
    policy.push_to_hub("someone/my-agent")                # the same files, in one commit to the Hub
    PointNavPolicy.from_pretrained("someone/my-agent")    # a Hub repository or a local folder

`ActorCritic.from_pretrained` returns whichever policy class the config describes; a subclass refuses a
folder of another class. Zoo names are navzoo.load's (the zoo is built on this module).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
from huggingface_hub import ModelCard, ModelHubMixin

from navzoo.errors import ConfigError, UnknownModelError, WeightsFormatError
from navzoo.models import weights
from navzoo.models.metadata import ModelMetadata

# A module reference, not its names: importing hf_hub first initialises navzoo.models (hf_hub reads the
# weight format's file names), which imports this module while hf_hub is still half-loaded.
from navzoo.weight_sources import hf_hub

HUB_REPO_ID = re.compile(r"[\w-][\w.-]*/[\w-][\w.-]*")
CARD_TAGS = ["navzoo", "reinforcement-learning", "embodied-ai", "navigation"]
CARD_TEMPLATE = """---
{{ card_data }}
---

# {{ repo_id or name or "navzoo navigation policy" }}

A {{ task }} navigation policy for navzoo: {{ architecture }}. It was written with `save_pretrained`, in
navzoo's format (config.json and model.safetensors). Load it with

```python
import navzoo

policy = navzoo.load("{{ "hf-hub:" ~ repo_id if repo_id else "path/to/this/folder" }}")
```

`navzoo push` publishes a model with a card that also reports its evaluation on navzoo's simulator.
"""

Policy = TypeVar("Policy", bound="PolicyHubMixin")
_POLICY_CLASSES: dict[type, type[PolicyHubMixin]] = {}  # config class -> the policy class built from it


class PolicyHubMixin(
    ModelHubMixin,
    library_name="navzoo",
    pipeline_tag="reinforcement-learning",
    tags=CARD_TAGS,
    model_card_template=CARD_TEMPLATE,
):
    """Hub methods for a policy class; a concrete class names the config it is built from."""

    config_class: ClassVar[type | None] = None

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("config_class") is not None:
            _POLICY_CLASSES[cls.config_class] = cls

    @staticmethod
    def class_for(config: Any) -> type[PolicyHubMixin]:
        """The policy class an architecture config builds."""
        if type(config) not in _POLICY_CLASSES:
            raise ConfigError("architecture", type(config).__name__, [c.__name__ for c in _POLICY_CLASSES])
        return _POLICY_CLASSES[type(config)]

    def _save_pretrained(self, save_directory: Path) -> None:
        weights.save_pretrained(self, save_directory)

    def push_to_hub(self, repo_id: str, *, model_card_kwargs: dict[str, Any] | None = None, **kwargs) -> str:
        """ModelHubMixin.push_to_hub; the generated card is titled with `repo_id`."""
        card = {"repo_id": repo_id, **(model_card_kwargs or {})}
        return super().push_to_hub(repo_id, model_card_kwargs=card, **kwargs)

    def generate_model_card(self, *args, **kwargs) -> ModelCard:
        config = self.config
        sensors = ", ".join(config.visual_sensors) or "no camera"
        architecture = (
            f"{config.backbone or 'blind'} encoder, {config.rnn_type} of {config.hidden_size}, {sensors}"
        )
        described = {"name": self.name, "task": self.task, "architecture": architecture}
        return super().generate_model_card(*args, **{**described, **kwargs})

    @classmethod
    def from_pretrained(
        cls: type[Policy],
        pretrained_model_name_or_path: str | Path,
        *,
        force_download: bool = False,
        token: str | bool | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        revision: str | None = None,
        map_location: str | torch.device = "cpu",
    ) -> Policy:
        """A policy with its weights, in eval mode, from a local folder (config.json + model.safetensors)
        or a Hub repository "org/name" (navzoo also spells it "hf-hub:org/name"). The keywords are
        ModelHubMixin's; `map_location` is the device, as in PyTorchModelHubMixin.

        Unlike ModelHubMixin's default, config.json is read once, as navzoo's format (not as __init__
        arguments), and a pathlib.Path is always a local folder.
        """
        name = pretrained_model_name_or_path
        if isinstance(name, Path) and not name.is_dir():
            raise UnknownModelError(
                f"{name} is not an existing folder with config.json and model.safetensors"
            )
        return cls._from_pretrained(
            model_id=str(name),
            revision=revision,
            cache_dir=cache_dir,
            force_download=force_download,
            local_files_only=local_files_only,
            token=token,
            map_location=map_location,
        )

    @classmethod
    def _from_pretrained(
        cls: type[Policy],
        *,
        model_id: str,
        revision: str | None,
        cache_dir: str | Path | None,
        force_download: bool,
        local_files_only: bool,
        token: str | bool | None,
        map_location: str | torch.device = "cpu",
    ) -> Policy:
        if Path(model_id).is_dir():
            return cls.from_folder(model_id, device=map_location)
        repo_id = model_id.removeprefix(hf_hub.HF_HUB_PREFIX)
        if not HUB_REPO_ID.fullmatch(repo_id) or repo_id.startswith("."):
            raise UnknownModelError(
                f"{model_id!r} is neither an existing folder (with config.json and model.safetensors) nor a "
                "Hub repository id 'org/name'; zoo names load with navzoo.load"
            )
        hub = {"revision": revision, "cache_dir": cache_dir, "token": token, "force_download": force_download}
        return cls.from_folder(
            hf_hub.hub_folder(repo_id, **hub, local_files_only=local_files_only), device=map_location
        )

    @classmethod
    def from_folder(
        cls: type[Policy],
        folder: str | Path,
        *,
        device: str | torch.device = "cpu",
        fallback: ModelMetadata | None = None,
    ) -> Policy:
        """Build the policy `folder`/config.json describes and load `folder`/model.safetensors strictly.

        `fallback` gives the name and provenance where the file has none (a zoo entry's, for its weights).
        The architecture is first built on the meta device (shapes, no memory) and compared with the shapes
        in the safetensors header, so a config that disagrees with its weights is refused before anything is
        allocated.
        """
        folder = Path(folder)
        config, _ = weights.read_config(folder)
        if fallback is not None:
            config = config.replace(metadata=config.metadata.or_else(fallback))
        policy_class = cls.class_for(config)
        if not issubclass(policy_class, cls):
            raise WeightsFormatError(
                f"{folder} holds a {policy_class.__name__}, not a {cls.__name__}: load it with "
                f"{policy_class.__name__}.from_pretrained, ActorCritic.from_pretrained or navzoo.load"
            )
        weights_file = folder / weights.WEIGHTS_NAME
        # Weights come from the file, so there is no point fetching timm's ImageNet weights first.
        with torch.device("meta"):
            shapes = weights.read_header(weights_file)
            weights.check_shapes(policy_class(config, fetch_timm_weights=False), shapes, str(weights_file))
        policy = policy_class(config, fetch_timm_weights=False)
        tensors = weights.read_weights(weights_file)
        weights.check_state_dict(policy, tensors, str(weights_file))
        policy.load_state_dict(tensors, strict=True)
        return policy.to(device).eval()
