"""Resumable HTTP downloads with a progress bar.

A file is written to `<file>.part` as it arrives and renamed when complete. A connection that breaks after
sending data is resumed with an HTTP Range request, a few times; a failed download keeps its .part file (a
crash does too), and the next call resumes from it.
"""

from __future__ import annotations

import os
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


def download(url: str, dest: Path) -> None:
    """Fetch `url` to `dest` through `dest`.part, continuing from what the .part file already holds."""
    part = dest.with_name(dest.name + ".part")
    resumes = 0
    while True:
        before = _size(part)
        try:
            _fetch(url, part, dest.name)
            break
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


def _fetch(url: str, part: Path, filename: str) -> None:
    """One request: the bytes after those `part` holds (or all of them if the server ignores Range)."""
    have = _size(part)
    # Identity encoding: Range offsets count the bytes of the file itself, which is what iter_raw yields.
    headers = {"Accept-Encoding": "identity"} | ({"Range": f"bytes={have}-"} if have else {})
    with httpx.stream("GET", url, headers=headers, timeout=TIMEOUT, follow_redirects=True) as response:
        if response.status_code == 416 and have:  # the partial file does not fit the server's: start again
            part.unlink()
            return _fetch(url, part, filename)
        response.raise_for_status()
        resumed = response.status_code == 206
        total = _total_size(response, have if resumed else 0)
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
                file.write(chunk)
                bar.update(len(chunk))
    if total is not None and _size(part) != total:
        raise httpx.RemoteProtocolError(f"received {_size(part):,} of {total:,} bytes")


def _total_size(response: httpx.Response, offset: int) -> int | None:
    """The whole file's size: from Content-Range for a resumed download, else from Content-Length."""
    whole = response.headers.get("Content-Range", "").rpartition("/")[2]
    if is_decimal(whole):
        return int(whole)
    length = response.headers.get("Content-Length", "")
    return offset + int(length) if is_decimal(length) else None


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _describe(err: httpx.HTTPError) -> str:
    text = str(err) or type(err).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        text += "; point SSL_CERT_FILE at your certificate bundle"
    return text
