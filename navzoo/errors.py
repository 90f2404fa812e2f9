"""Exceptions a user can cause. Every message says what was wrong and what to do about it."""

import difflib
import reprlib
from collections.abc import Iterable

# A value quoted in a message is cut short: a fuzzed or hostile config may hold megabytes.
_quote = reprlib.Repr()
_quote.maxstring = _quote.maxother = 80
_quote.maxlevel = 3


class NavzooError(Exception):
    """Base class for all errors raised by navzoo on bad input."""


def closest(word: object, choices: Iterable[object]) -> str | None:
    """The choice a mistyped `word` most likely meant (difflib's closest match), or None."""
    found = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return found[0] if found else None


class ConfigError(NavzooError, ValueError):
    """A configuration field has a value navzoo cannot use. `suggestion`, the value most likely meant (see
    `closest`), leads the message: after a typo it is what the reader needs, not the list of everything."""

    def __init__(
        self, field: str, value: object, allowed: str | Iterable[object], *, suggestion: str | None = None
    ):
        if not isinstance(allowed, str):
            allowed = "one of " + ", ".join(repr(a) for a in allowed)
        self.field, self.value, self.allowed, self.suggestion = field, value, allowed, suggestion
        hint = f"did you mean {suggestion!r}? Allowed values are" if suggestion else "allowed values are"
        super().__init__(f"invalid {field}={_quote.repr(value)}: {hint} {allowed}")


class ConfigTooLargeError(ConfigError):
    """A config whose buffers would not fit in the memory available (navzoo.memory). `field` and `value`
    are what drives the estimate most; the message gives the estimate, the memory and the fields to lower."""

    def __init__(self, field: str, value: object, message: str):
        self.field, self.value, self.allowed, self.suggestion = field, value, message, None
        NavzooError.__init__(self, message)


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


class SceneError(NavzooError, ValueError):
    """A scene mesh is missing, unreadable, of an unsupported kind, or has no usable geometry."""
