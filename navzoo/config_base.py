"""The base of navzoo's frozen config dataclasses: reading them from plain data and writing them back.

Configs come from YAML presets, `key=value` overrides, config.json files and replays. `Config.from_dict`
refuses a key the config does not have (suggesting the closest field, since the usual cause is a typo) and
builds nested configs from their mappings; `to_dict` writes what YAML and JSON can hold (nested configs
as mappings, tuples as lists), so `from_dict(to_dict())` gives the config back. Values are checked by each
config's __post_init__ (navzoo.typed_config), not here.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, ClassVar, Self

from navzoo.errors import ConfigError, closest


class Config:
    """Mixin of a frozen config dataclass: from_dict, to_dict and replace."""

    # What @dataclass gives each subclass (and what the dataclasses functions below need).
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def from_dict(cls, data: Any, block: str = "") -> Self:
        """The config whose fields `data` sets; a nested config's field may hold a mapping of its fields.

        `block` is where `data` sits in its document, e.g. "sim" in a training config: a wrong key is then
        named "sim.<key>". Empty for the top level of a document.
        """
        check_keys(cls, data, block)
        values = dict(data)
        for name, kind in _nested_configs(cls).items():
            if name in values and not isinstance(values[name], kind):
                values[name] = kind.from_dict(values[name], _key(block, name))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The fields in declaration order, as YAML and JSON hold them: nested configs as mappings, tuples
        as lists."""
        return {field.name: _plain(getattr(self, field.name)) for field in dataclasses.fields(self)}

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`, checked as a new config is; TypeError for a name that is not a field."""
        return dataclasses.replace(self, **changes)


def check_keys(kind: type, data: Any, block: str = "") -> None:
    """ConfigError unless `data` is a mapping that sets only fields of the dataclass `kind`, and every
    field without a default. `block` names the mapping, as in Config.from_dict."""
    if not isinstance(data, dict):
        raise ConfigError(block or "config", data, f"a mapping of {kind.__name__} fields")
    known = [field.name for field in dataclasses.fields(kind)]
    listed = f"fields of {kind.__name__}: {', '.join(sorted(known))}"
    unknown = sorted(set(data) - set(known), key=str)
    if unknown:
        key = unknown[0]
        raise ConfigError(_key(block, key), data[key], listed, suggestion=closest(key, known))
    missing = [name for name in _required(kind) if name not in data]
    if missing:
        raise ConfigError(
            block or "config", sorted(data, key=str), f"a mapping that sets {missing[0]} ({listed})"
        )


def one_of(name: str, value: Any, allowed: tuple) -> None:
    """ConfigError naming `name` unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ConfigError(name, value, allowed)


def _key(block: str, key: object) -> str:
    return f"{block}.{key}" if block else str(key)


def _required(kind: type) -> list[str]:
    missing = dataclasses.MISSING
    return [
        field.name
        for field in dataclasses.fields(kind)
        if field.init and field.default is missing and field.default_factory is missing
    ]


@functools.cache
def _nested_configs(kind: type) -> dict[str, type[Config]]:
    """The fields of `kind` annotated with a config class."""
    hints = typing.get_type_hints(kind)
    return {
        field.name: hints[field.name]
        for field in dataclasses.fields(kind)
        if isinstance(hints[field.name], type) and issubclass(hints[field.name], Config)
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Config):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
