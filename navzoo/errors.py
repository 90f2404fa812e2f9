"""Exceptions a user can cause. Every message says what was wrong and what to do about it."""

import reprlib
from collections.abc import Iterable

# A value quoted in a message is cut short: a fuzzed or hostile config may hold megabytes.
_quote = reprlib.Repr()
_quote.maxstring = _quote.maxother = 80
_quote.maxlevel = 3


class NavzooError(Exception):
    """Base class for all errors raised by navzoo on bad input."""


class ConfigError(NavzooError, ValueError):
    """A configuration field has a value navzoo cannot use."""

    def __init__(self, field: str, value: object, allowed: str | Iterable[object]):
        if not isinstance(allowed, str):
            allowed = "one of " + ", ".join(repr(a) for a in allowed)
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"invalid {field}={_quote.repr(value)}: allowed values are {allowed}")


class EpisodeError(NavzooError, ValueError):
    """An episode or episode file cannot be used in the scene it names."""


class UnknownModelError(NavzooError, LookupError):
    """A model name is neither in the zoo registry, nor a local folder, nor an `hf-hub:` name."""


class WeightsNotAvailableError(NavzooError, FileNotFoundError):
    """Weights for a model are neither on disk nor in the Hugging Face cache, and cannot be downloaded."""


class WeightsFormatError(NavzooError, ValueError):
    """A weight folder or file is missing, corrupt, truncated or inconsistent with its config.json."""


class UnsafeCheckpointError(NavzooError, ValueError):
    """A checkpoint carries pickled Python objects, which navzoo refuses to unpickle."""


class ObservationError(NavzooError, ValueError):
    """Observations, recurrent state, actions or masks given to a policy have a wrong key, shape or dtype."""


class ReplayError(NavzooError, ValueError):
    """A replay file is missing, corrupt, of another format, or written by a newer navzoo."""
