"""Model downloads for the demo, apart from its run slots.

A zoo model that is not cached yet downloads when a visitor first picks it, which can take minutes. Done
inside the run that asked for it, it would hold one of the few run slots all that time, and two such
visitors would make everyone else wait. Here downloads run on a few threads of their own; a run waits a
short while for its model, and if the download is still going it gives its slot back with a message to
press Run again, while the download goes on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Generic, TypeVar

from navzoo.errors import NavzooError

T = TypeVar("T")


class StillDownloading(NavzooError):
    """A model's download goes on past the time a run waits for it."""


class Fetches(Generic[T]):
    """At most `workers` downloads at once, one per key however many runs ask for it; a finished one is
    handed to the next run that asks (its result, or its error, after which the next asker tries again)."""

    def __init__(self, workers: int):
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="navzoo-demo-fetch")
        self._pending: dict[Hashable, tuple[Future[T], float]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, name: str, fetch: Callable[[], T], wait: float | None) -> T:
        """`fetch()`'s result, waiting at most `wait` seconds (None: until it is done) for it, else
        StillDownloading; `name` is how the message calls what is downloading."""
        with self._lock:
            if key not in self._pending:
                self._pending[key] = (self._pool.submit(fetch), time.monotonic())
            future, started = self._pending[key]
        try:
            result = future.result(timeout=wait)
        except FutureTimeout:
            raise StillDownloading(
                f"{name} is still downloading ({time.monotonic() - started:.0f} s so far); press Run again "
                "in a moment (other runs go on meanwhile)"
            ) from None
        finally:
            with self._lock:
                if future.done() and self._pending.get(key, (None,))[0] is future:
                    del self._pending[key]
        return result
