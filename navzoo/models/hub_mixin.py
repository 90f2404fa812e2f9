"""The Hugging Face Hub methods of every navzoo policy: `save_pretrained`, `from_pretrained` and
`push_to_hub`, from huggingface_hub's ModelHubMixin (the convention PyTorchModelHubMixin, timm and LeRobot
users know), over navzoo's own weight format (navzoo.models.weights). A folder written here is one that
navzoo.load, `navzoo push` and the zoo read, and the other way round.

    policy.save_pretrained("my-agent")                    # config.json, model.safetensors, README.md
    policy.push_to_hub("someone/my-agent")                # the same files, in one commit to the Hub
    PointNavPolicy.from_pretrained("someone/my-agent")    # a Hub repository or a local folder

`ActorCritic.from_pretrained` returns whichever policy class the config describes; a subclass refuses a
folder of another class. Zoo names are navzoo.load's (the zoo is built on this module).

Cards keep their generated part between CARD_BEGIN and CARD_END. A push, from here or by `navzoo push`,
replaces that part and keeps what a person wrote around it (merge_card).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import torch
from huggingface_hub import HfApi, ModelCard, ModelCardData, ModelHubMixin
from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError

from navzoo.errors import ConfigError, UnknownModelError
from navzoo.models import weights
from navzoo.models.configuration import PolicyConfig
from navzoo.names import SEEN_MAP
from navzoo.storage.hf_hub import HF_HUB_PREFIX, hub_folder

if TYPE_CHECKING:
    from navzoo.models.interface import NavigationPolicy

HUB_REPO_ID = re.compile(r"[\w-][\w.-]*/[\w-][\w.-]*")
CARD_NAME = "README.md"
CARD_BEGIN = "<!-- navzoo: generated card, replaced on every push -->"
CARD_END = "<!-- navzoo: end of generated card -->"
CARD_TAGS = ["navzoo", "reinforcement-learning", "embodied-ai", "navigation"]
CARD_TEMPLATE = (
    "---\n{{ card_data }}\n---\n\n"
    + CARD_BEGIN
    + """
# {{ repo_id or name or "navzoo navigation policy" }}

A {{ task }} navigation policy for navzoo: {{ architecture }}. It was written with `save_pretrained`, in
navzoo's format (config.json and model.safetensors). Load it with

```python
import navzoo

policy = navzoo.load("{{ "hf-hub:" ~ repo_id if repo_id else "path/to/this/folder" }}")
```

`navzoo push` publishes a model with a card that also reports its evaluation on navzoo's simulator.
"""
    + CARD_END
    + "\n"
)


Policy = TypeVar("Policy", bound="PolicyHubMixin")


class PolicyHubMixin(
    ModelHubMixin,
    library_name="navzoo",
    pipeline_tag="reinforcement-learning",
    tags=CARD_TAGS,
    model_card_template=CARD_TEMPLATE,
):
    """Hub methods for a policy class, which builds itself from a local folder (`from_folder`)."""

    @classmethod
    def from_folder(cls, folder: str | Path, *, device: str | torch.device = "cpu") -> Self:
        """The policy a local model folder holds (config.json + model.safetensors); the policy class
        implements it (navzoo.models.policy.ActorCritic)."""
        raise NotImplementedError

    # `self: NavigationPolicy`: the methods below use what the policy class this is mixed into provides.
    def _save_pretrained(self: NavigationPolicy, save_directory: Path) -> None:
        weights.save_pretrained(self, save_directory)

    def push_to_hub(
        self,
        repo_id: str,
        *,
        config: dict | None = None,
        commit_message: str = "Push model using huggingface_hub.",
        private: bool | None = None,
        token: str | None = None,
        branch: str | None = None,
        create_pr: bool | None = None,
        allow_patterns: list[str] | str | None = None,
        ignore_patterns: list[str] | str | None = None,
        delete_patterns: list[str] | str | None = None,
        model_card_kwargs: dict[str, Any] | None = None,
    ) -> str:
        """ModelHubMixin.push_to_hub (same arguments, one commit), except for the card: it is titled with
        `repo_id` and merged into the card the repository has, so a re-push keeps what a person wrote
        outside the generated block, as `navzoo push` does."""
        api = HfApi(token=token, library_name="navzoo")
        repo_id = api.create_repo(repo_id=repo_id, private=private, exist_ok=True).repo_id
        card = {"repo_id": repo_id, **(model_card_kwargs or {})}
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / repo_id
            self.save_pretrained(folder, config=config, model_card_kwargs=card)
            # A pull request starts from main, so its card is merged into main's.
            merge_repository_card(api, folder, repo_id, None if create_pr else branch)
            return api.upload_folder(
                repo_id=repo_id,
                repo_type="model",
                folder_path=folder,
                commit_message=commit_message,
                revision=branch,
                create_pr=create_pr,
                allow_patterns=allow_patterns,
                ignore_patterns=ignore_patterns,
                delete_patterns=delete_patterns,
            )

    def generate_model_card(self: NavigationPolicy, *args, **kwargs) -> ModelCard:
        config = self.config
        sensors = ", ".join(config.visual_sensors) or "no camera"
        if isinstance(config, PolicyConfig) and SEEN_MAP in config.sensors:
            size, cell = config.seen_map_size, config.seen_map_cell
            sensors += f", {SEEN_MAP} ({size}x{size} squares of {cell:g} m)"
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
        strict: bool = True,
        proxies: dict[str, str] | None = None,
        **model_kwargs: Any,
    ) -> Policy:
        """A policy with its weights, in eval mode, from a local folder (config.json + model.safetensors)
        or a Hub repository "org/name" (navzoo also spells it "hf-hub:org/name"). The keywords are
        ModelHubMixin's; `map_location` is the device, as in PyTorchModelHubMixin.

        Unlike ModelHubMixin's default, config.json is read once, as navzoo's format (not as __init__
        arguments), and a pathlib.Path is always a local folder. PyTorchModelHubMixin's other keywords are
        taken where they mean something here, and refused with the reason where they would not: loading is
        always strict, proxies come from HTTPS_PROXY / HTTP_PROXY (huggingface_hub 1.x has no `proxies`),
        and `**model_kwargs`, which would change the architecture, clash with the weights config.json
        describes.
        """
        if not strict:
            raise ConfigError("strict", strict, "True: navzoo loads every tensor of the architecture or none")
        if proxies is not None:
            raise ConfigError("proxies", proxies, "None: huggingface_hub takes proxies from HTTPS_PROXY")
        if model_kwargs:
            raise ConfigError(
                "model_kwargs",
                sorted(model_kwargs),
                "none: config.json fixes the architecture of these weights; navzoo.create_model(name, "
                "**changes) builds a changed one",
            )
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
        repo_id = model_id.removeprefix(HF_HUB_PREFIX)
        if not HUB_REPO_ID.fullmatch(repo_id) or repo_id.startswith("."):
            raise UnknownModelError(
                f"{model_id!r} is neither an existing folder (with config.json and model.safetensors) nor a "
                "Hub repository id 'org/name'; zoo names load with navzoo.load"
            )
        hub = {"revision": revision, "cache_dir": cache_dir, "token": token, "force_download": force_download}
        return cls.from_folder(
            hub_folder(repo_id, **hub, local_files_only=local_files_only), device=map_location
        )


def merge_card(generated: ModelCard, existing: ModelCard | None) -> ModelCard:
    """The card to push over `existing` (the repository's card, if it has one): the generated block and
    metadata replace their earlier versions, and what a person added stays: text outside the block,
    metadata keys navzoo does not write, tags beside navzoo's. A card without the block (written by hand,
    or by navzoo before it had one) keeps its text below the new block."""
    if existing is None:
        return generated
    ours, theirs = generated.data.to_dict(), existing.data.to_dict()
    metadata = {**theirs, **ours}
    tags = ours.get("tags") or []
    metadata["tags"] = [*tags, *(t for t in theirs.get("tags") or [] if t not in tags)]
    block = generated.text.strip()
    text = existing.text
    if CARD_BEGIN in text and CARD_END in text:
        before, rest = text.split(CARD_BEGIN, 1)
        after = rest.split(CARD_END, 1)[1]
        text = f"{before}{block}{after}"
    else:
        text = f"{block}\n\n{text.strip()}\n" if text.strip() else f"{block}\n"
    data = ModelCardData(**metadata)
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{text.lstrip()}")


def merge_repository_card(api: HfApi, folder: Path, repo_id: str, revision: str | None) -> None:
    """Merge `folder`'s generated card, about to be uploaded, into the one `repo_id` holds at `revision`."""
    path = Path(folder) / CARD_NAME
    if path.is_file():
        merge_card(ModelCard(path.read_text()), _repository_card(api, repo_id, revision)).save(path)


def _repository_card(api: HfApi, repo_id: str, revision: str | None) -> ModelCard | None:
    """The model card the repository holds at `revision`, or None if it has none yet."""
    try:
        path = api.hf_hub_download(repo_id, CARD_NAME, revision=revision)
    except (EntryNotFoundError, RevisionNotFoundError):
        return None
    return ModelCard(Path(path).read_text())
