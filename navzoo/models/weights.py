"""navzoo's weight format: a folder with config.json (name, task and provenance beside the architecture:
sensors, sizes, actions) and model.safetensors (parameters and buffers under habitat-baselines'
PointNavResNetPolicy names).

This module writes and reads the files and checks them against a policy; it imports no model class, only
the interface every policy implements (an nn.Module too), so the policies themselves can use it
(ActorCritic.save_pretrained / from_pretrained, which build the right class). The file names are in
navzoo.names, shared with the Hub transport (navzoo.storage.hf_hub).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import safetensors.torch
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from navzoo.errors import ConfigError, WeightsFormatError
from navzoo.models.configuration import PolicyConfig
from navzoo.models.metadata import METADATA_KEYS, ModelMetadata
from navzoo.models.neural_controller_config import ARCHITECTURE_TYPE, NeuralControllerConfig
from navzoo.names import CONFIG_NAME, WEIGHTS_NAME
from navzoo.storage.bounded import MAX_CONFIG_BYTES, read_bounded

if TYPE_CHECKING:
    from navzoo.models.interface import NavigationPolicy

FORMAT = "navzoo-policy"
FORMAT_VERSION = 1

ModelConfig = PolicyConfig | NeuralControllerConfig


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    """The architecture block of a config.json: a PolicyConfig, or a neural controller's (type key)."""
    if isinstance(data, dict) and data.get("type") == ARCHITECTURE_TYPE:
        return NeuralControllerConfig.from_dict(data)
    return PolicyConfig.from_dict(data)


def save_pretrained(
    policy: NavigationPolicy,
    folder: str | Path,
    *,
    name: str | None = None,
    provenance: dict[str, Any] | None = None,
    dtype: torch.dtype | None = None,
) -> Path:
    """Write `folder`/config.json and `folder`/model.safetensors; returns the folder.

    `dtype` (e.g. torch.float16) stores floating-point tensors in that type, halving the file; loading
    casts them back into the model's float32 parameters.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: _stored(v, dtype) for k, v in policy.state_dict().items()}
    # Written from bytes, so the file gets the umask's permissions (safetensors' save_file makes it 0600,
    # which other members of a group sharing run folders cannot read).
    # One metadata key: safetensors writes its metadata map in a random order, so with two keys the same
    # weights could give different bytes (and a re-upload of unchanged weights a new file on the Hub).
    data = safetensors.torch.save(tensors, metadata={"format": "pt"})
    (folder / WEIGHTS_NAME).write_bytes(data)
    # The metadata sit beside the architecture, where every navzoo version has read them.
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name or policy.name,
        "task": policy.task,
        "architecture": policy.config.to_dict(),
        "provenance": provenance if provenance is not None else policy.provenance,
    }
    (folder / CONFIG_NAME).write_text(json.dumps(config, indent=2) + "\n")
    return folder


def weights_digest(module: torch.nn.Module) -> str:
    """SHA-256 of a model's parameters and buffers (names, dtypes, shapes and values): two models digest
    alike only when they hold the same numbers, whatever their config.json or provenance say."""
    digest = hashlib.sha256()
    for key, tensor in sorted(module.state_dict().items()):
        values = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{key}:{values.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(values.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _stored(tensor: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    # A tensor whose values do not fit the smaller type keeps its own (a running count past float16's 65504
    # would become infinite).
    if dtype is not None and tensor.is_floating_point() and _fits(tensor, dtype):
        tensor = tensor.to(dtype)
    return tensor.detach().to("cpu").contiguous()


def _fits(tensor: torch.Tensor, dtype: torch.dtype) -> bool:
    finite = tensor[torch.isfinite(tensor)]
    return finite.numel() == 0 or float(finite.abs().max()) <= torch.finfo(dtype).max


def read_config(folder: str | Path) -> tuple[ModelConfig, dict[str, Any]]:
    """The config of a weight folder, its metadata included, and the whole parsed config.json.

    Files written before models had a task hold no `task`: they are PointGoal models (ModelMetadata's
    default), as is one whose `name`, `task` or `provenance` is null.
    """
    path = Path(folder) / CONFIG_NAME
    hint = "a navzoo model folder holds config.json and model.safetensors (write one with `navzoo convert`)"
    if not path.is_file():
        raise WeightsFormatError(f"{path} does not exist: {hint}")
    too_large = f"(navzoo writes a few KB): it is not a navzoo config; {hint}"
    raw = read_bounded(path, MAX_CONFIG_BYTES, str(path), too_large, error=WeightsFormatError)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise WeightsFormatError(
            f"{path} is not valid JSON ({reason}); re-download or re-convert the model"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or "architecture" not in data:
        raise WeightsFormatError(
            f"{path} is not a navzoo config (no format={FORMAT!r} with an architecture): {hint}"
        )
    version = data.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise WeightsFormatError(f"{path} has format_version {version!r}; it must be an integer: {hint}")
    if version > FORMAT_VERSION:
        raise WeightsFormatError(
            f"{path} has format_version {version}, newer than this navzoo reads ({FORMAT_VERSION}); "
            "upgrade navzoo"
        )
    for key in ("name", "task"):
        if not isinstance(data.get(key, ""), str | None):
            raise WeightsFormatError(f"{path}: {key} must be a string; got {data[key]!r}")
    if not isinstance(data.get("provenance"), dict | None):
        raise WeightsFormatError(f"{path}: provenance must be a JSON object or null")
    try:
        metadata = ModelMetadata.from_dict({k: data[k] for k in METADATA_KEYS if data.get(k) is not None})
        return config_from_dict(data["architecture"]).replace(metadata=metadata), data
    except ConfigError as err:
        raise WeightsFormatError(f"{path}: {err}") from None


def read_weights(path: str | Path) -> dict[str, torch.Tensor]:
    path = Path(path)
    if not path.is_file():
        raise WeightsFormatError(f"{path} does not exist; a navzoo model folder needs it next to config.json")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as err:
        raise WeightsFormatError(
            f"{path} is corrupt or truncated ({err}); delete it and download or convert the model again"
        ) from None


def read_header(path: str | Path) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor of a safetensors file, from its header alone (no data is read)."""
    path = Path(path)
    if not path.is_file():
        raise WeightsFormatError(f"{path} does not exist; a navzoo model folder needs it next to config.json")
    try:
        with safe_open(path, framework="pt") as file:
            return {name: tuple(file.get_slice(name).get_shape()) for name in file.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError) as err:
        raise WeightsFormatError(
            f"{path} is corrupt or truncated ({err}); delete it and download or convert the model again"
        ) from None


def check_state_dict(policy: NavigationPolicy, tensors: dict[str, torch.Tensor], source: str) -> None:
    """Raise WeightsFormatError unless `tensors` has exactly the policy's names and shapes, all finite."""
    check_shapes(policy, {k: tuple(v.shape) for k, v in tensors.items()}, source)
    broken = [k for k, v in tensors.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if broken:
        raise WeightsFormatError(
            f"{source} holds NaN or infinite values in {len(broken)} tensor(s): {', '.join(broken[:4])}"
            f"{', ...' if len(broken) > 4 else ''}. These weights cannot act; use an earlier checkpoint of "
            "the run or get the model again."
        )


def check_shapes(policy: NavigationPolicy, shapes: dict[str, tuple[int, ...]], source: str) -> None:
    """Raise WeightsFormatError unless `shapes` names exactly the policy's tensors with their shapes."""
    expected = {k: tuple(v.shape) for k, v in policy.state_dict().items()}
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    wrong = [
        f"{k}: {shapes[k]} in the file, {shape} in the model"
        for k, shape in expected.items()
        if k in shapes and shapes[k] != shape
    ]
    if missing or unexpected or wrong:
        problems = [
            f"{label} ({len(items)}): {', '.join(items[:4])}{', ...' if len(items) > 4 else ''}"
            for label, items in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong))
            if items
        ]
        raise WeightsFormatError(
            f"{source} does not match the architecture {policy.config.backbone or 'blind'!r} "
            f"(hidden {policy.config.hidden_size}, sensors {', '.join(policy.config.sensors)}): "
            + "; ".join(problems)
            + ". The config and the weights disagree: fix the config or convert the checkpoint again."
        )
