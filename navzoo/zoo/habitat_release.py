"""habitat's released DD-PPO checkpoints, fetched on first use and cached as navzoo model folders.

habitat's release folder holds one .pth per model under the file names habitat-lab's DD-PPO README links.
The environment variable NAVZOO_DDPPO_BASE_URL replaces it with a mirror holding the same file names: an
http(s) URL, a file:// URL or a local folder. On first use of an entry navzoo

1. downloads its .pth with a progress bar, continuing an interrupted download with an HTTP Range request
   (the partial file survives a crash too, as `<file>.part`; navzoo.storage.http_download);
2. reads it weights-only and converts it with navzoo.zoo.habitat_checkpoints, which checks every tensor
   against the entry's architecture; a file that fails is deleted, so the next call downloads it again;
3. writes config.json + model.safetensors to a temporary folder and renames it into the cache,
   HF_HOME/navzoo/ddppo-models-2/<habitat file name without .pth>/.

Later uses read that folder and make no request at all, so HF_HUB_OFFLINE=1 works once a model is cached.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

from huggingface_hub import constants

from navzoo.errors import (
    NavzooError,
    UnknownModelError,
    UnsafeCheckpointError,
    WeightsFormatError,
    WeightsNotAvailableError,
)
from navzoo.models.weights import save_pretrained
from navzoo.names import CONFIG_NAME, WEIGHTS_NAME
from navzoo.storage.locks import hold
from navzoo.zoo.habitat_checkpoints import habitat_to_policy
from navzoo.zoo.registry import DDPPO_RELEASE_URL, ModelEntry

BASE_URL_ENV = "NAVZOO_DDPPO_BASE_URL"
# The cache's folder, renamed whenever the conversion's output changes so that older conversions are made
# anew (2: the GPS+Compass bearing's weights mirrored to navzoo's sign, navzoo.zoo.habitat_checkpoints).
RELEASE_FOLDER = "ddppo-models-2"


def base_url() -> str:
    """The release folder files are fetched from: NAVZOO_DDPPO_BASE_URL, or habitat's own."""
    url = os.environ.get(BASE_URL_ENV, "").strip() or DDPPO_RELEASE_URL
    return url if url.endswith("/") else url + "/"


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """Where converted releases are kept: `cache_dir`, or navzoo/ next to the Hugging Face cache."""
    return Path(cache_dir) if cache_dir is not None else Path(constants.HF_HOME) / "navzoo"


def cached_release(filename: str, cache_dir: str | Path | None = None) -> Path | None:
    """The cached model folder converted from habitat's `filename`, if it is there; no request is made."""
    folder = _release_dir(cache_dir) / filename.removesuffix(".pth")
    return folder if all((folder / name).is_file() for name in (CONFIG_NAME, WEIGHTS_NAME)) else None


def release_folder(
    entry: ModelEntry, *, cache_dir: str | Path | None = None, local_files_only: bool = False
) -> Path:
    """The cached navzoo model folder of a released entry, fetched and converted first if it is not there.

    `local_files_only=True` or HF_HUB_OFFLINE=1 never fetches: a missing model is an error then.
    """
    filename = entry.release_file
    if filename is None:
        raise UnknownModelError(f"{entry.name} is not one of habitat's released checkpoints")
    found = cached_release(filename, cache_dir)
    if found is not None:
        return found
    url = base_url() + filename
    if local_files_only or constants.HF_HUB_OFFLINE:
        raise _failure(
            WeightsNotAvailableError,
            entry,
            url,
            f"it is not in navzoo's cache ({_release_dir(cache_dir)}) and offline mode is on "
            "(HF_HUB_OFFLINE=1 or local_files_only=True), so it was not downloaded. When online, run "
            f"`navzoo pull {entry.name}`",
        )
    releases = _release_dir(cache_dir)
    releases.mkdir(parents=True, exist_ok=True)
    # One process fetches a given file at a time; the others wait and then find it cached.
    with hold(releases / f"{filename}.lock", f"the cache of {filename}", wait=True):
        found = cached_release(filename, cache_dir)
        if found is not None:
            return found
        return _fetch_and_convert(entry, filename, url, releases)


def _release_dir(cache_dir: str | Path | None) -> Path:
    return cache_root(cache_dir) / RELEASE_FOLDER


def _fetch_and_convert(entry: ModelEntry, filename: str, url: str, releases: Path) -> Path:
    local = _local_path(url)
    if local is not None:  # a mirror on this machine's file system: read it where it is
        if not local.is_file():
            raise _failure(WeightsNotAvailableError, entry, url, f"{local} does not exist")
        return _convert(entry, filename, url, local, releases, downloaded=False)
    # httpx, with the command-line libraries it loads, is imported only when a file is downloaded: at module
    # level it would add about 0.1 s to every `import navzoo`.
    from navzoo.storage.http_download import DownloadError, download

    dest = releases / filename
    try:
        download(url, dest)
    except DownloadError as err:
        raise _failure(WeightsNotAvailableError, entry, url, str(err)) from None
    return _convert(entry, filename, url, dest, releases, downloaded=True)


def _local_path(url: str) -> Path | None:
    """The file a file:// URL or a plain path names; None for an http(s) URL."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    return None if parsed.scheme in ("http", "https") else Path(url)


def _convert(
    entry: ModelEntry, filename: str, url: str, path: Path, releases: Path, downloaded: bool
) -> Path:
    """Convert `path` into the cache atomically; a downloaded file is deleted whether or not it converts."""
    try:
        policy = habitat_to_policy(path, model=entry.name)
    except (WeightsFormatError, UnsafeCheckpointError) as err:
        raise _failure(type(err), entry, url, f"the file was refused: {err}") from None
    finally:
        if downloaded:
            path.unlink(missing_ok=True)
    final = releases / filename.removesuffix(".pth")
    staging = releases / f".{final.name}.tmp-{os.getpid()}"
    for stale in (*releases.glob(f".{final.name}.tmp-*"), final):  # left by a killed process
        shutil.rmtree(stale, ignore_errors=True)
    # The provenance names the address the file came from: habitat's, or the mirror's.
    save_pretrained(policy, staging, provenance={**(policy.provenance or {}), "fetched_from": url})
    os.replace(staging, final)
    return final


def _failure(kind: type[NavzooError], entry: ModelEntry, url: str, reason: str) -> NavzooError:
    """A navzoo error naming the file, the URL tried, the mirror variable and the manual route."""
    name, filename = entry.name, entry.release_file
    return kind(
        f"could not get the weights of {name} ({filename}) from {url}: {reason}. {BASE_URL_ENV} can "
        "name a mirror of habitat's ddppo-models folder (a URL or a local folder holding the same file "
        f"names). Or get {filename} yourself and convert it: `navzoo convert {filename} {name}/`, then "
        f"navzoo.load('{name}/')."
    )
