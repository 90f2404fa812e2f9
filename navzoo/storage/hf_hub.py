"""Find a model folder on the Hugging Face Hub through huggingface_hub's cache.

Both files are fetched with `hf_hub_download`, so the usual cache layout, `revision`, `cache_dir`,
`local_files_only` and HF_HUB_OFFLINE=1 behave as for any Hub library; the returned folder is the
cached snapshot holding config.json and model.safetensors.
"""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from navzoo.errors import UnknownModelError, WeightsFormatError, WeightsNotAvailableError
from navzoo.names import CONFIG_NAME, WEIGHTS_NAME
from navzoo.version import __version__

HF_HUB_PREFIX = "hf-hub:"  # how navzoo (like timm) names a Hub repository where it also takes zoo names


def hub_folder(
    repo_id: str,
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    local_files_only: bool = False,
    token: str | bool | None = None,
    force_download: bool = False,
    how_to_get: str | None = None,
) -> Path:
    """Local snapshot folder of `repo_id` with config.json and model.safetensors, downloading if needed.

    `token` and `force_download` mean what they mean to hf_hub_download. `how_to_get` is appended to the
    error raised when the files are neither cached nor downloadable.
    """
    where = f"{repo_id}" + (f"@{revision}" if revision else "")
    how_to_get = how_to_get or f"When online, run `navzoo pull hf-hub:{repo_id}` or call navzoo.load again."
    if local_files_only:
        return _cached_folder(repo_id, revision, cache_dir, where, how_to_get)
    path = None
    for filename in (CONFIG_NAME, WEIGHTS_NAME):
        try:
            path = hf_hub_download(
                repo_id,
                filename,
                revision=revision,
                cache_dir=cache_dir,
                local_files_only=local_files_only,
                token=token,
                force_download=force_download,
                library_name="navzoo",
                library_version=__version__,
            )
        except HFValidationError as err:
            raise UnknownModelError(
                f"{repo_id!r} is not a valid Hub repository id ({err}); use 'org/name'"
            ) from None
        except LocalEntryNotFoundError:
            raise _not_cached(filename, where, cache_dir, how_to_get) from None
        except (RepositoryNotFoundError, GatedRepoError) as err:
            raise WeightsNotAvailableError(
                f"the Hub repository {repo_id} is missing or not accessible ({type(err).__name__}); "
                f"log in with `hf auth login` if it is private. {how_to_get}"
            ) from None
        except RevisionNotFoundError:
            raise WeightsNotAvailableError(
                f"{repo_id} has no revision {revision!r}; check the branch, tag or commit"
            ) from None
        except EntryNotFoundError:
            raise WeightsFormatError(
                f"{where} has no {filename}: it is not a navzoo model repository "
                "(config.json + model.safetensors)"
            ) from None
        except HfHubHTTPError as err:
            raise WeightsNotAvailableError(
                f"downloading {filename} of {where} failed: {err}. {how_to_get}"
            ) from None
    return Path(path).parent


def is_cached(repo_id: str) -> bool:
    """Whether both files of Hub repository `repo_id` are in huggingface_hub's default cache (no request)."""
    return all(
        isinstance(_cached_file(repo_id, name, None, None), str) for name in (CONFIG_NAME, WEIGHTS_NAME)
    )


def _cached_file(repo_id: str, filename: str, cache_dir: str | Path | None, revision: str | None):
    """The cached path of one file (a str), or what try_to_load_from_cache says instead of one."""
    return try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir, revision=revision)


def _cached_folder(
    repo_id: str, revision: str | None, cache_dir: str | Path | None, where: str, how_to_get: str
) -> Path:
    """The snapshot folder from the cache alone. Unlike hf_hub_download(local_files_only=True), this makes
    no request of any kind (huggingface_hub may still contact the Hub while building request headers)."""
    folders = set()
    for filename in (CONFIG_NAME, WEIGHTS_NAME):
        found = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir, revision=revision)
        if not isinstance(found, str):
            raise _not_cached(filename, where, cache_dir, how_to_get, local_files_only=True)
        folders.add(Path(found).parent)
    if len(folders) != 1:
        raise WeightsFormatError(
            f"the cached {CONFIG_NAME} and {WEIGHTS_NAME} of {where} are in different snapshots; "
            f"run `navzoo pull hf-hub:{repo_id}` when online"
        )
    return folders.pop()


def _not_cached(
    filename: str, where: str, cache_dir, how_to_get: str, local_files_only: bool = False
) -> WeightsNotAvailableError:
    cache = cache_dir or constants.HF_HUB_CACHE
    reason = (
        "offline mode is on (HF_HUB_OFFLINE=1 or local_files_only=True)"
        if constants.HF_HUB_OFFLINE or local_files_only
        else "the Hub could not be reached (HF_HUB_OFFLINE=1 skips the attempt)"
    )
    return WeightsNotAvailableError(
        f"{filename} of {where} is not in the Hugging Face cache ({cache}) and {reason}. {how_to_get}"
    )
