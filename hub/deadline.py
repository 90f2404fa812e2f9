"""A deadline for huggingface_hub's requests to the Hub.

The library sends its API and upload requests through one shared httpx client (`get_session`), built by its
client factory with `timeout=None`, and those requests take the client's default: a Hub that accepts the
connection and never answers holds `navzoo push` forever. `hub_deadline` sets a timeout on that client for
its duration (also on a client installed with `huggingface_hub.set_client_factory`: a proxy, a test).
Blocks run one at a time, so overlapping pushes restore the timeout they found. The timeout applies to each
step of a request (connecting, sending a chunk, waiting for an answer), not to a whole upload, so large
weights still upload while bytes keep moving. Downloads pass their own timeouts (HF_HUB_ETAG_TIMEOUT,
HF_HUB_DOWNLOAD_TIMEOUT) and keep them. A limit: after a failed connection huggingface_hub closes its client
and its retry builds a new one, with the library's default (no timeout) again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

DEFAULT_TIMEOUT_S = 60.0  # the Hub answers in seconds; a commit of large files may take tens of them
_ONE_AT_A_TIME = threading.Lock()


@contextlib.contextmanager
def hub_deadline(seconds: float) -> Iterator[None]:
    """huggingface_hub's requests give up after `seconds` without progress (httpx2.TimeoutException)."""
    # Imported here: the command line reads DEFAULT_TIMEOUT_S without loading the HTTP stack.
    import httpx2
    from huggingface_hub import get_session

    with _ONE_AT_A_TIME:
        session = get_session()
        before = session.timeout
        session.timeout = httpx2.Timeout(seconds)
        try:
            yield
        finally:
            session.timeout = before
