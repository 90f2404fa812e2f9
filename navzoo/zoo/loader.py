"""The model zoo's loader: `list_models`, `create_model` and `load`.

The entries themselves are navzoo.zoo.registry's; where an entry's weights come from is
`ModelEntry.weights_source`, and each source is fetched by its module in navzoo.weight_sources:
- "package": navzoo's own agents, shipped inside the package, read where they are;
- "habitat-release": habitat-baselines' released DD-PPO checkpoints. On first use the file is downloaded
  from habitat's release folder (or the mirror NAVZOO_DDPPO_BASE_URL names), converted and cached
  (navzoo.zoo.habitat_release);
- "hub": a navzoo model repository on the Hugging Face Hub, read through huggingface_hub's cache
  (navzoo.storage.hf_hub).

`locate` is the one rule that turns a name into a model folder: `load`, `create_model(pretrained=True)` and
`navzoo pull` all go through it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from navzoo.errors import ConfigError, UnknownModelError
from navzoo.models import ActorCritic, PointNavPolicy, PolicyConfig, build_policy, model_size
from navzoo.models.model_memory import refuse_unless_model_fits
from navzoo.models.weights import ModelConfig, read_config
from navzoo.storage.hf_hub import HF_HUB_PREFIX, hub_folder, is_cached
from navzoo.zoo.habitat_checkpoints import warn_if_mirrored
from navzoo.zoo.habitat_release import cached_release, release_folder
from navzoo.zoo.registry import (
    HABITAT_RELEASE,
    HUB,
    ModelEntry,
    entries,
    find_entry,
    model_entry,
    unknown_model_message,
)


def list_models(
    pattern: str | Iterable[str] = "*", *, pretrained: bool = False, local: bool = False
) -> list[str]:
    """Sorted registry names matching a shell-style pattern (or any of several).

    `pretrained=True` keeps the entries `load` can load: shipped in the package, habitat's released
    checkpoints (downloaded on first use) and Hub repositories; `weights_source` of an entry says which.
    `local=True` keeps entries whose weights `load` finds without the network: shipped, or already in the
    cache.
    """
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    matching = (
        e
        for e in entries()
        if (e.weights_source is not None or not pretrained) and (not local or _is_local(e))
    )
    return sorted(e.name for e in matching if any(fnmatch.fnmatchcase(e.name, p.lower()) for p in patterns))


def _is_local(entry: ModelEntry) -> bool:
    # In the order of ModelEntry.weights_source: PACKAGE, HABITAT_RELEASE, HUB.
    if entry.packaged is not None:
        return True
    if entry.release_file is not None:
        return cached_release(entry.release_file) is not None
    if entry.hub_repo is not None:
        return is_cached(entry.hub_repo)
    return False


def create_model(name: str, pretrained: bool = False, **overrides: Any) -> ActorCritic:
    """Build a zoo architecture; `pretrained=True` also loads its weights (see `load`).

    Keyword overrides change fields of the entry's PolicyConfig (e.g. resolution=(128, 128)); they
    cannot be combined with released weights, whose shapes are fixed. For timm entries, pretrained=True
    means the encoder starts from timm's ImageNet weights.

    As in timm, `name` may also be "hf-hub:org/name" (or a model folder): its architecture, with its
    weights when `pretrained=True` (that is `load(name)`), else freshly initialised.
    """
    if str(name).startswith(HF_HUB_PREFIX) or (find_entry(str(name)) is None and Path(name).is_dir()):
        return _create_from_folder(str(name), pretrained, overrides)
    entry = model_entry(name)
    if pretrained and entry.weights_source is not None:
        if overrides:
            raise ConfigError(
                "overrides",
                sorted(overrides),
                f"none with pretrained=True: {name}'s weights fix the architecture",
            )
        return load(entry.name)
    if pretrained and entry.config.family != "timm":
        raise ConfigError(
            "pretrained",
            True,
            f"False: {name} has no weights; navzoo.list_models(pretrained=True) lists those that do",
        )
    changes = {**overrides, "timm_pretrained": True} if pretrained else overrides
    try:
        config = entry.config.replace(**changes)
    except TypeError:
        fields = ", ".join(f.name for f in dataclasses.fields(PolicyConfig))
        raise ConfigError("overrides", sorted(overrides), f"PolicyConfig fields: {fields}") from None
    refuse_unless_model_fits(config, model_size(config))
    return PointNavPolicy(config.replace(metadata=entry.metadata))


def _create_from_folder(name: str, pretrained: bool, overrides: dict[str, Any]) -> ActorCritic:
    if overrides:
        raise ConfigError(
            "overrides", sorted(overrides), f"none: {name}'s config.json fixes the architecture"
        )
    if pretrained:
        return load(name)
    config, _ = read_config(locate(name)[0])
    refuse_unless_model_fits(config, model_size(config))
    return build_policy(config, fetch_timm_weights=False)


def load(
    name: str | Path,
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    local_files_only: bool = False,
    device: str = "cpu",
) -> ActorCritic:
    """Load a policy with its weights, in eval mode.

    `name` is a zoo name, a local folder holding config.json and model.safetensors, or
    "hf-hub:org/name[@revision]", read by the rule of `locate`: a zoo name always means the zoo entry, and
    "./name" the folder of that name. Weights of a zoo entry that do not name themselves get the entry's
    name and provenance.
    """
    folder, entry = locate(name, revision=revision, cache_dir=cache_dir, local_files_only=local_files_only)
    policy = ActorCritic.from_folder(
        folder, device=device, fallback=entry.metadata if entry is not None else None
    )
    warn_if_mirrored(policy.provenance, folder)
    return policy


def load_model_config(name: str | Path) -> ModelConfig:
    """The config of the model `name` names (by the rule of `load`, metadata included), checked against
    its weights' header as `load` checks it but without reading a tensor: for checks made before building
    it. A model not yet on this machine is fetched first, as `load` fetches it."""
    folder, entry = locate(name)
    return ActorCritic.config_from_folder(folder, fallback=entry.metadata if entry is not None else None)


def locate(
    name: str | Path,
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    local_files_only: bool = False,
) -> tuple[Path, ModelEntry | None]:
    """The local folder holding the config.json and model.safetensors that `name` names (fetched first if
    it must be), and the zoo entry it names (None for a folder or a Hub repository). In this order:

    1. "hf-hub:org/name[@revision]": that Hugging Face Hub repository, through huggingface_hub's cache
       (`revision`, `cache_dir`).
    2. A zoo name, or the file name of one of habitat's released checkpoints: that zoo entry, wherever its
       weights live (see `entry_folder`), even when the working directory holds a folder of that name.
    3. Anything else, and any pathlib.Path: a local folder. "./name" (or an absolute path) is how to name a
       folder that shares its name with a zoo entry.

    `local_files_only=True` (or HF_HUB_OFFLINE=1) makes no request and fails if nothing is cached.
    """
    text = str(name)
    if text.startswith(HF_HUB_PREFIX):
        repo_id, _, at_revision = text[len(HF_HUB_PREFIX) :].partition("@")
        hub = {"revision": revision or at_revision or None, "cache_dir": cache_dir}
        return hub_folder(repo_id, **hub, local_files_only=local_files_only), None
    entry = None if isinstance(name, Path) else find_entry(text)
    if entry is not None:
        cache = {"revision": revision, "cache_dir": cache_dir, "local_files_only": local_files_only}
        return entry_folder(entry.name, **cache), entry
    return _local_folder(name), None


def _local_folder(name: str | Path) -> Path:
    text = str(name)
    if Path(name).is_dir():
        return Path(name)
    if Path(name).is_file():
        raise UnknownModelError(
            f"{text!r} is a file; navzoo loads folders with config.json and model.safetensors. Convert a "
            f"habitat-baselines checkpoint first: `navzoo convert {text} <folder>`"
        )
    if isinstance(name, Path) or "/" in text or text.startswith("."):
        # "org/name" is how the Hub spells a repository, so say how navzoo spells it.
        hub_hint = (
            f", or write {HF_HUB_PREFIX}{text} for the Hugging Face Hub repository {text}"
            if not isinstance(name, Path) and re.fullmatch(r"\w[\w.-]*/\w[\w.-]*", text)
            else ""
        )
        raise UnknownModelError(
            f"{text!r} is not an existing folder; pass a folder with config.json and model.safetensors"
            + hub_hint
        )
    raise UnknownModelError(unknown_model_message(text))


def entry_folder(
    name: str,
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    local_files_only: bool = False,
) -> Path:
    """The local folder holding zoo entry `name`'s config.json and model.safetensors, wherever its
    weights come from:

    - shipped in the package: its folder there;
    - habitat's release: navzoo's cache (HF_HOME/navzoo, or `cache_dir`), downloaded and converted on
      first use (navzoo.zoo.habitat_release);
    - a Hub repository: huggingface_hub's cache (`cache_dir`, `revision`).

    `local_files_only=True` (or HF_HUB_OFFLINE=1) makes no request and fails if nothing is cached.
    """
    entry = model_entry(name)
    source = entry.weights_source
    if source is None:
        raise UnknownModelError(
            f"{name!r} is an architecture without released weights, so there is nothing to pull or load: "
            f"build it with navzoo.create_model({name!r})"
            + (" (pretrained=True loads timm's ImageNet encoder)" if entry.config.family == "timm" else "")
        )
    if revision is not None and source != HUB:
        raise ConfigError("revision", revision, f"None: {name}'s weights are not in a Hub repository")
    if entry.packaged is not None:  # source == PACKAGE
        return entry.packaged
    if source == HABITAT_RELEASE:
        return release_folder(entry, cache_dir=cache_dir, local_files_only=local_files_only)
    assert entry.hub_repo is not None  # source == HUB
    hub = {"revision": revision, "cache_dir": cache_dir, "local_files_only": local_files_only}
    return hub_folder(entry.hub_repo, **hub, how_to_get=f"When online, run `navzoo pull {name}`.")
