"""The training presets (train/presets/*.yaml, shipped in the package) and reading the YAML of a preset or a
config file. Importable without torch, so the command line lists the presets at once."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from navzoo.errors import ConfigError
from navzoo.storage.bounded import MAX_CONFIG_BYTES, read_bounded
from navzoo.train.overrides import YamlLoader


def presets_folder() -> Traversable:
    return resources.files("navzoo.train") / "presets"


def preset_names() -> list[str]:
    files = presets_folder().iterdir()
    return sorted(f.name.removesuffix(".yaml") for f in files if f.name.endswith(".yaml"))


def read_config_file(source: str | Path) -> dict[str, Any]:
    """The mapping a preset name or a YAML file holds (not yet checked as a config)."""
    path = Path(source)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise ConfigError("config", str(source), "an existing YAML file or a preset: " + _presets_text())
        text = read_bounded(path, MAX_CONFIG_BYTES, f"config file {path}")
    elif source in preset_names():
        text = (presets_folder() / f"{source}.yaml").read_text()
    else:
        raise ConfigError("config", str(source), "a YAML file or a preset: " + _presets_text())
    try:
        return yaml.load(text, Loader=YamlLoader) or {}
    except yaml.YAMLError as err:
        raise ConfigError("config", str(source), f"valid YAML ({err})") from None
    except RecursionError:
        raise ConfigError("config", str(source), "YAML nested a few levels deep, as a config is") from None


def _presets_text() -> str:
    return ", ".join(preset_names())
