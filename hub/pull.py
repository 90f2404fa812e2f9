"""`navzoo pull`: fetch a model's files into the Hugging Face cache, where `navzoo.load` finds them.

Both go through `navzoo.hub.resolve.hub_folder`, so a pulled model loads offline (HF_HUB_OFFLINE=1) and
the cache is the one every Hugging Face library shares (HF_HOME / HF_HUB_CACHE, or --cache-dir).
"""

from __future__ import annotations

from pathlib import Path

from navzoo.errors import UnknownModelError
from navzoo.hub.resolve import hub_folder
from navzoo.zoo import HF_HUB_PREFIX, model_entry


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pull",
        help="download a model into the Hugging Face cache and print where it is",
        description="Download config.json and model.safetensors of a zoo model or a Hub repository into "
        "the Hugging Face cache (the files navzoo.load reads) and print the folder holding them.",
    )
    parser.add_argument("model", help="zoo name, org/name or hf-hub:org/name[@revision]")
    parser.add_argument("--revision", help="branch, tag or commit (default main)")
    parser.add_argument("--cache-dir", help="cache folder (default: huggingface_hub's, HF_HUB_CACHE)")
    parser.set_defaults(run=_run)


def _run(args) -> None:
    folder = pull(args.model, revision=args.revision, cache_dir=args.cache_dir)
    print(folder)


def pull(model: str, *, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """The cached snapshot folder of `model` (a zoo name, org/name or hf-hub:org/name[@revision]); for a
    model shipped inside navzoo, its folder in the package (there is nothing to download)."""
    name = model.removeprefix(HF_HUB_PREFIX)
    packaged = None if "/" in name else model_entry(name).packaged
    if packaged is not None:
        return packaged
    repo_id, at_revision = _repo_id(model)
    return hub_folder(repo_id, revision=revision or at_revision, cache_dir=cache_dir)


def _repo_id(model: str) -> tuple[str, str | None]:
    name = model.removeprefix(HF_HUB_PREFIX)
    if "/" in name:
        repo_id, _, revision = name.partition("@")
        return repo_id, revision or None
    entry = model_entry(name)  # raises with close matches for a misspelt zoo name
    if entry.hub_repo is None:
        raise UnknownModelError(
            f"{name!r} is an architecture without released weights, so there is nothing to pull: build it "
            f"with navzoo.create_model({name!r})"
        )
    return entry.hub_repo, None
