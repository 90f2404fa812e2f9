"""`navzoo pull`: fetch a model ahead of time into the cache `navzoo.load` reads, and print its folder.

Hub repositories go through `navzoo.hub.resolve.hub_folder` into the Hugging Face cache (HF_HOME /
HF_HUB_CACHE, or --cache-dir); habitat's released DD-PPO checkpoints through `navzoo.hub.release` into
navzoo's cache beside it. Either way a pulled model then loads offline (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

from pathlib import Path

from navzoo.hub.resolve import hub_folder
from navzoo.zoo import HF_HUB_PREFIX, entry_folder


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pull",
        help="download a model into the cache navzoo.load reads and print where it is",
        description="Fetch a model ahead of time: a Hub repository's config.json and model.safetensors into "
        "the Hugging Face cache, or one of habitat's released DD-PPO checkpoints (downloaded from habitat's "
        "release folder or NAVZOO_DDPPO_BASE_URL, then converted) into navzoo's cache beside it. Prints "
        "the folder holding the model.",
    )
    parser.add_argument("model", help="zoo name, org/name or hf-hub:org/name[@revision]")
    parser.add_argument("--revision", help="branch, tag or commit of a Hub repository (default main)")
    parser.add_argument(
        "--cache-dir",
        help="cache folder (default: huggingface_hub's HF_HUB_CACHE for Hub repositories, "
        "HF_HOME/navzoo for habitat's releases)",
    )
    parser.set_defaults(run=_run)


def _run(args) -> None:
    folder = pull(args.model, revision=args.revision, cache_dir=args.cache_dir)
    print(folder)


def pull(model: str, *, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """The local folder of `model` (a zoo name, org/name or hf-hub:org/name[@revision]), fetched if it is
    not cached yet; for a model shipped inside navzoo, its folder in the package."""
    name = model.removeprefix(HF_HUB_PREFIX)
    if "/" in name:
        repo_id, _, at_revision = name.partition("@")
        return hub_folder(repo_id, revision=revision or at_revision or None, cache_dir=cache_dir)
    return entry_folder(name, revision=revision, cache_dir=cache_dir)
