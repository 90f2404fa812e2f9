"""`navzoo pull`: fetch a model ahead of time into the cache `navzoo.load` reads, and print its folder.

Names are read as `navzoo.load` reads them (navzoo.zoo.loader.locate), and "org/name" as a Hub repository too.
Hub repositories go through `navzoo.storage.hf_hub` into the Hugging Face cache (HF_HOME /
HF_HUB_CACHE, or --cache-dir); habitat's released DD-PPO checkpoints through
`navzoo.zoo.habitat_release` into navzoo's cache beside it. Either way a pulled model then loads
offline (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

from pathlib import Path


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
    """The local folder of `model` (a zoo name, a model folder, hf-hub:org/name[@revision], or org/name
    where no such folder exists), fetched if it is not cached yet; for a model shipped inside navzoo, its
    folder in the package."""
    from navzoo.storage.hf_hub import HF_HUB_PREFIX
    from navzoo.zoo.loader import locate

    if "/" in model and not model.startswith(HF_HUB_PREFIX) and not Path(model).is_dir():
        model = HF_HUB_PREFIX + model
    return locate(model, revision=revision, cache_dir=cache_dir)[0]
