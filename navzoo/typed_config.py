"""Type checking of navzoo's config dataclasses against their own annotations.

Configs arrive from YAML presets, `key=value` overrides, config.json files and replays, so any field can
hold any JSON/YAML value. `check_field_types` runs first in every config's __post_init__: it names the key,
the value and the expected type, so the range checks after it (and the code that builds models from a
config) only ever see the types they were written for. It also normalises what those formats cannot say:
lists become tuples (configs stay hashable), integral floats become ints (YAML reads 1e7 as a float).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any

from navzoo.errors import ConfigError


def check_field_types(config: Any, prefix: str = "") -> None:
    """Check (and normalise in place) every field of the frozen dataclass `config`; raise ConfigError naming
    `prefix` + the field on the first value of the wrong type."""
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        checked = _coerce(value, hints[field.name], prefix + field.name)
        if checked is not value:
            object.__setattr__(config, field.name, checked)


def describe(kind: Any) -> str:
    """A reader's name for a type annotation: 'an integer', 'a list of 2 integers', ..."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        arms = [describe(a) for a in args if a is not type(None)]
        return " or ".join(arms) + (" or null" if type(None) in args else "")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_plural(args[0])}"
        if len(set(args)) == 1:
            return f"a list of {len(args)} {_plural(args[0])}"
        return "a list of " + ", ".join(describe(a) for a in args)
    if origin is dict:
        return "a mapping"
    return _NAMES.get(kind, f"a {getattr(kind, '__name__', kind)}")


_NAMES = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}


def _plural(kind: Any) -> str:
    plurals = {bool: "booleans", int: "integers", float: "finite numbers", str: "strings"}
    return plurals.get(kind, describe(kind))


def _coerce(value: Any, kind: Any, name: str) -> Any:
    if kind is Any:
        return value
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arm in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, arm, name)
            except ConfigError:
                continue
        raise _wrong(name, value, kind)
    if origin is tuple:
        return _coerce_tuple(value, kind, args, name)
    if origin is dict:
        if not isinstance(value, dict):
            raise _wrong(name, value, kind)
        key_kind, value_kind = args
        return {
            _coerce_key(k, key_kind, name): _coerce(v, value_kind, f"{name}.{k}") for k, v in value.items()
        }
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return value if isinstance(value, float) else float(value)
    elif isinstance(kind, type) and isinstance(value, kind):
        return value
    raise _wrong(name, value, kind)


def _coerce_tuple(value: Any, kind: Any, args: tuple, name: str) -> tuple:
    if not isinstance(value, list | tuple):
        raise _wrong(name, value, kind)
    if len(args) == 2 and args[1] is Ellipsis:
        element_kinds = [args[0]] * len(value)
    elif len(value) == len(args):
        element_kinds = list(args)
    else:
        raise _wrong(name, value, kind)
    return tuple(
        _coerce(v, k, f"{name}[{i}]") for i, (v, k) in enumerate(zip(value, element_kinds, strict=True))
    )


def is_decimal(text: str) -> bool:
    """Whether int() reads `text` as a plain non-negative decimal: str.isdigit alone is also true of digits
    int() refuses, such as superscripts ("¹"), which Latin-1 header values and typed ids can hold."""
    return text.isascii() and text.isdigit()


def _coerce_key(key: Any, kind: Any, name: str) -> Any:
    # JSON object keys are always strings, so an integer key may arrive as "1".
    if kind is int and isinstance(key, str) and is_decimal(key):
        return int(key)
    return _coerce(key, kind, f"{name} key")


def _wrong(name: str, value: Any, kind: Any) -> ConfigError:
    return ConfigError(name, value, f"{describe(kind)} (got {type(value).__name__})")
