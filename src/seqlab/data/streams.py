"""Byte streams for the downloader (`seqlab.data.download`), which verifies and stores what they yield.

Opening a URL (http/https only, errors as `DataError`), reading it in chunks
with an optional progress bar and a length check, decompressing gzip on the
fly, and checking zip member names against "zip slip".
"""

from __future__ import annotations

import http.client
import sys
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Iterator

from seqlab.errors import DataError

CHUNK = 1 << 20  # read and hash in 1 MiB pieces: memory stays flat for any file size
TIMEOUT_S = 60.0


class _Response:
    """Context manager yielding (readable, content length) for a URL, errors as DataError."""

    def __init__(self, url: str):
        self.url = url

    def __enter__(self) -> tuple[BinaryIO, int | None]:
        try:
            self.resp = urllib.request.urlopen(self.url, timeout=TIMEOUT_S)  # noqa: S310 (http/https only)
        except (urllib.error.URLError, OSError) as e:
            raise DataError(
                f"could not download {self.url}: {e}. Put the files in a folder and pass "
                f"--data-dir / set SEQLAB_DATA, or set SEQLAB_DATA_URL to a mirror"
            ) from e
        length = self.resp.headers.get("Content-Length")
        return self.resp, int(length) if length and length.isdigit() else None

    def __exit__(self, *exc: object) -> None:
        self.resp.close()


def open_url(url: str) -> _Response:
    if not url.startswith(("http://", "https://")):
        # urlopen would also read file:// and ftp://; a mirror is HTTP(S).
        raise DataError(f"refusing to download {url!r}: only http:// and https:// URLs are used")
    return _Response(url)


def read_chunks(stream: BinaryIO, total: int | None, enabled: bool, label: str) -> Iterator[bytes]:
    """Chunks of ``stream``, counted on a tqdm bar when ``enabled``."""
    bar = None
    if enabled:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="B", unit_scale=True, desc=label, file=sys.stderr, leave=False)
    received = 0
    try:
        while True:
            try:
                chunk = stream.read(CHUNK)
            except (OSError, http.client.HTTPException) as e:  # reset mid-transfer
                raise DataError(f"download of {label} was interrupted: {e!r}") from e
            if not chunk:
                break
            received += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
            yield chunk
        # urllib returns b"" on a connection closed early; the header says what was due.
        if total is not None and received != total:
            raise DataError(f"download of {label} was interrupted after {received} of {total} bytes")
    finally:
        if bar is not None:
            bar.close()


def gunzip(chunks: Iterator[bytes], url: str) -> Iterator[bytes]:
    """Decompress a gzip stream chunk by chunk (several concatenated members allowed)."""
    import zlib

    def new() -> "zlib._Decompress":
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # 16+: expect a gzip header

    d = new()
    try:
        for chunk in chunks:
            while chunk:
                out = d.decompress(chunk)
                if out:
                    yield out
                # A member ended inside this chunk: the rest starts the next member.
                chunk = d.unused_data if d.eof else b""
                if chunk:
                    d = new()
        tail = d.flush()
        if tail:
            yield tail
        if not d.eof:
            raise DataError(f"{url}: the gzip stream is truncated")
    except zlib.error as e:
        raise DataError(f"{url}: not a valid gzip file ({e})") from e


# ---------------------------------------------------------------- zip archives


def safe_member_path(dest: Path, member: str) -> Path:
    """Where ``member`` would extract under ``dest``; `DataError` if it would escape.

    Absolute names, drive letters, ``..`` components and backslash tricks are
    all refused (the "zip slip" attack), whatever the current platform.
    """
    pure = PurePosixPath(member.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
        raise DataError(f"refusing zip member {member!r}: it would extract outside {dest}")
    out = (dest / pure).resolve()
    if not out.is_relative_to(dest.resolve()):
        raise DataError(f"refusing zip member {member!r}: it would extract outside {dest}")
    return out
