"""Resumable HTTP downloads with a progress bar and a deadline.

A file is written to `<file>.part` as it arrives and renamed when complete. A connection that breaks after
sending data is resumed with an HTTP Range request, a few times; a failed download keeps its .part file (a
crash does too), and the next call resumes from it. A transfer slower than a floor (MinimumSpeed: by
default 1 kB/s over a minute) is abandoned, so a server that trickles bytes cannot hold a download, and the
lock around it, forever. A server that answers a Range request from another offset than asked, or sends
more than the file's size, gets the download restarted from zero: the .part never outgrows the file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from huggingface_hub.utils import tqdm

from navzoo.typed_config import is_decimal

# A stalled or unreachable server fails within seconds; a connection that breaks after sending data is
# resumed where it stopped, a few times, before giving up.
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
RESUMES = 3


class DownloadError(Exception):
    """Why a download failed, in words; the caller says what was being fetched."""


@dataclass(frozen=True)
class MinimumSpeed:
    """The slowest transfer a download keeps going: at least `bytes_per_s` on average over every
    `window_s` seconds. NAVZOO_MIN_DOWNLOAD_SPEED (bytes/s) and NAVZOO_DOWNLOAD_WINDOW (s) set the default."""

    bytes_per_s: float = 1024.0
    window_s: float = 60.0

    @classmethod
    def from_environment(cls) -> MinimumSpeed:
        default = cls()
        return cls(
            _positive_env("NAVZOO_MIN_DOWNLOAD_SPEED", default.bytes_per_s),
            _positive_env("NAVZOO_DOWNLOAD_WINDOW", default.window_s),
        )


class _TooSlow(Exception):
    """The transfer fell below the MinimumSpeed."""


class _WrongRange(Exception):
    """The server's bytes do not continue the partial file (another offset, or past the file's end)."""


def download(url: str, dest: Path, minimum_speed: MinimumSpeed | None = None) -> None:
    """Fetch `url` to `dest` through `dest`.part, continuing from what the .part file already holds."""
    part = dest.with_name(dest.name + ".part")
    floor = minimum_speed or MinimumSpeed.from_environment()
    resumes = restarts = 0
    while True:
        before = _size(part)
        try:
            _fetch(url, part, dest.name, floor)
            break
        except _WrongRange as err:
            part.unlink(missing_ok=True)  # what it holds cannot be trusted to continue
            if restarts:
                raise DownloadError(f"the server's byte ranges do not add up ({err})") from None
            restarts += 1
        except _TooSlow as err:
            raise DownloadError(
                f"the transfer was abandoned: {err}; the {_size(part):,} bytes received are kept and the "
                "next try resumes (NAVZOO_MIN_DOWNLOAD_SPEED and NAVZOO_DOWNLOAD_WINDOW set the floor)"
            ) from None
        except httpx.HTTPStatusError as err:
            status = err.response.status_code
            reason = f"the server answered HTTP {status} {err.response.reason_phrase}"
            if status == 404:
                reason += f": there is no {dest.name} at that address"
            raise DownloadError(reason) from None
        except httpx.HTTPError as err:
            if _size(part) > before and resumes < RESUMES:
                resumes += 1  # the connection broke after sending data: ask for the rest
                continue
            kept = (
                f"; the {_size(part):,} bytes received are kept and the next try resumes"
                if _size(part)
                else ""
            )
            raise DownloadError(f"the download failed ({_describe(err)}){kept}") from None
    os.replace(part, dest)


def _fetch(url: str, part: Path, filename: str, floor: MinimumSpeed) -> None:
    """One request: the bytes after those `part` holds (or all of them if the server ignores Range)."""
    have = _size(part)
    # Identity encoding: Range offsets count the bytes of the file itself, which is what iter_raw yields.
    headers = {"Accept-Encoding": "identity"} | ({"Range": f"bytes={have}-"} if have else {})
    with httpx.stream("GET", url, headers=headers, timeout=TIMEOUT, follow_redirects=True) as response:
        if response.status_code == 416 and have:  # the partial file does not fit the server's: start again
            part.unlink()
            return _fetch(url, part, filename, floor)
        response.raise_for_status()
        resumed = response.status_code == 206
        if resumed and _range_start(response) != have:
            raise _WrongRange(f"asked for bytes from {have:,}, got {response.headers.get('Content-Range')!r}")
        total = _total_size(response, have if resumed else 0)
        written = have if resumed else 0
        window_start, window_bytes = time.monotonic(), 0
        with (
            part.open("ab" if resumed else "wb") as file,
            tqdm(
                total=total,
                initial=have if resumed else 0,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=filename,
            ) as bar,
        ):
            for chunk in response.iter_raw():  # written as it arrives: a broken connection loses nothing
                if total is not None and written + len(chunk) > total:
                    raise _WrongRange(f"the server sent more than the file's {total:,} bytes")
                file.write(chunk)
                written += len(chunk)
                bar.update(len(chunk))
                window_bytes += len(chunk)
                elapsed = time.monotonic() - window_start
                if elapsed >= floor.window_s:
                    if window_bytes < floor.bytes_per_s * elapsed:
                        raise _TooSlow(
                            f"{window_bytes:,} bytes in {elapsed:.0f} s, below the floor of "
                            f"{floor.bytes_per_s:,.0f} bytes/s over {floor.window_s:.0f} s"
                        )
                    window_start, window_bytes = time.monotonic(), 0
    if total is not None and _size(part) != total:
        raise httpx.RemoteProtocolError(f"received {_size(part):,} of {total:,} bytes")


def _total_size(response: httpx.Response, offset: int) -> int | None:
    """The whole file's size: from Content-Range for a resumed download, else from Content-Length."""
    whole = response.headers.get("Content-Range", "").rpartition("/")[2]
    if is_decimal(whole):
        return int(whole)
    length = response.headers.get("Content-Length", "")
    return offset + int(length) if is_decimal(length) else None


def _range_start(response: httpx.Response) -> int | None:
    """The first byte's offset in a 206's Content-Range ("bytes START-END/TOTAL"), or None."""
    unit, _, spec = response.headers.get("Content-Range", "").partition(" ")
    start = spec.partition("-")[0]
    return int(start) if unit == "bytes" and is_decimal(start) else None


def _positive_env(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise DownloadError(f"{name}={text!r} is not a positive number; unset it or give one")
    return value


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _describe(err: httpx.HTTPError) -> str:
    text = str(err) or type(err).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        text += "; point SSL_CERT_FILE at your certificate bundle"
    return text
