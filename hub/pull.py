"""Fetch a model ahead of time into the cache `navzoo.load` reads (`navzoo pull`).

Names are read as `navzoo.load` reads them (navzoo.zoo.loader.locate), and "org/name" as a Hub repository too.
Hub repositories go through `navzoo.storage.hf_hub` into the Hugging Face cache (HF_HOME /
HF_HUB_CACHE, or --cache-dir); habitat's released DD-PPO checkpoints through
`navzoo.zoo.habitat_release` into navzoo's cache beside it. Either way a pulled model then loads
offline (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

from pathlib import Path

from navzoo.storage.hf_hub import HF_HUB_PREFIX
from navzoo.zoo.loader import locate


def pull(model: str, *, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """The local folder of `model` (a zoo name, a model folder, hf-hub:org/name[@revision], or org/name
    where no such folder exists), fetched if it is not cached yet; for a model shipped inside navzoo, its
    folder in the package."""
    if "/" in model and not model.startswith(HF_HUB_PREFIX) and not Path(model).is_dir():
        model = HF_HUB_PREFIX + model
    return locate(model, revision=revision, cache_dir=cache_dir)[0]
