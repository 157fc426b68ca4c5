"""Find a dataset's files: a local folder, or a verified download into the cache.

Resolution order for a dataset file (e.g. ``sst2/train.tsv``):

1. an explicit ``data_dir`` argument (the CLI's ``--data-dir``),
2. the folder named by ``$SEQLAB_DATA``,
3. the cache, ``$SEQLAB_CACHE`` or ``~/.cache/seqlab``, downloading what is missing.

A local folder may be the data root (holding ``sst2/``, ``tinyshakespeare/``,
``multi30k/``, the layout of ``shared/data``) or the dataset's own folder.
Every file is checked against the sha256 in `REGISTRY`, wherever it comes
from; a download that fails the check is deleted before `ChecksumError` is
raised, so a bad file is never used.

Downloads go through ``urllib`` to a temporary file inside the cache and are
renamed into place only once verified (``os.replace`` is atomic), so an
interrupted download leaves nothing behind that looks finished; the byte
streams themselves (HTTP(S), gzip, zip member names) are in `seqlab.data.streams`.
``$SEQLAB_DATA_URL`` (or ``base_url=``) points the downloader at a mirror laid
out as ``{base_url}/{dataset}/{source}``, which is how the tests serve
``shared/data`` from a local HTTP server.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Iterator

from seqlab.data.streams import CHUNK, gunzip, open_url, read_chunks, safe_member_path
from seqlab.errors import ChecksumError, DataError



@dataclass(frozen=True)
class RemoteFile:
    """One final file of a dataset and where its bytes come from.

    name:   file name inside the dataset folder (``train.tsv``)
    source: path of the download relative to the dataset's base URL
    sha256: expected hex digest of the final file (after unzip / gunzip)
    member: for a zip source, the archive member that becomes ``name``
    gunzip: the source is gzip-compressed and is decompressed on the fly
    """

    name: str
    source: str
    sha256: str
    member: str | None = None
    gunzip: bool = False


@dataclass(frozen=True)
class DatasetSource:
    """A dataset's folder name, canonical base URL and files."""

    name: str
    base_url: str
    files: tuple[RemoteFile, ...]

    def file(self, name: str) -> RemoteFile:
        for f in self.files:
            if f.name == name:
                return f
        known = ", ".join(f.name for f in self.files)
        raise DataError(f"dataset {self.name!r} has no file {name!r} (known: {known})")


# The registry is data: URLs and checksums, copied from shared/data/SHA256SUMS.
# The checksums are of the final files, so a mirror that re-compresses the
# archives still verifies.
_MULTI30K = "https://github.com/multi30k/dataset/raw/master/data/task1/raw/"
REGISTRY: dict[str, DatasetSource] = {
    "sst2": DatasetSource(
        name="sst2",
        base_url="https://dl.fbaipublicfiles.com/glue/data/",
        files=(
            RemoteFile("train.tsv", "SST-2.zip",
                       "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1",
                       member="SST-2/train.tsv"),
            RemoteFile("dev.tsv", "SST-2.zip",
                       "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0",
                       member="SST-2/dev.tsv"),
        ),
    ),
    "tinyshakespeare": DatasetSource(
        name="tinyshakespeare",
        base_url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/",
        files=(
            RemoteFile("input.txt", "input.txt",
                       "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"),
        ),
    ),
    "multi30k": DatasetSource(
        name="multi30k",
        base_url=_MULTI30K,
        files=(
            RemoteFile("train.en", "train.en.gz",
                       "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6", gunzip=True),
            RemoteFile("train.de", "train.de.gz",
                       "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72", gunzip=True),
            RemoteFile("val.en", "val.en.gz",
                       "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227", gunzip=True),
            RemoteFile("val.de", "val.de.gz",
                       "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660", gunzip=True),
            RemoteFile("test2016.en", "test_2016_flickr.en.gz",
                       "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182", gunzip=True),
            RemoteFile("test2016.de", "test_2016_flickr.de.gz",
                       "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16", gunzip=True),
        ),
    ),
}


def cache_dir() -> Path:
    """The download cache: ``$SEQLAB_CACHE`` or ``~/.cache/seqlab``."""
    env = os.environ.get("SEQLAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "seqlab"


def _source(name: str) -> DatasetSource:
    try:
        return REGISTRY[name]
    except KeyError:
        raise DataError(f"unknown dataset {name!r}; known: {', '.join(REGISTRY)}") from None


# ---------------------------------------------------------------- checksums

# (resolved path, size, mtime_ns) -> sha256. A file is hashed once per process
# unless it changes; the tests resolve the same 9 MB many times.
_VERIFIED: dict[tuple[str, int, int], str] = {}


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, memoised on (path, size, mtime)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    digest = _VERIFIED.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(CHUNK), b""):
                h.update(chunk)
        digest = h.hexdigest()
        _VERIFIED[key] = digest
    return digest


def verify_file(path: Path, expected: str) -> None:
    """Raise `ChecksumError` naming the file unless its sha256 is ``expected``."""
    actual = sha256_file(path)
    if actual != expected:
        raise ChecksumError(f"{path}: sha256 is {actual} but {expected} was expected")


# ---------------------------------------------------------------- resolution


def _local_file(root: Path, dataset: str, name: str) -> Path | None:
    """``root/dataset/name`` or ``root/name`` (root is the dataset folder itself)."""
    for candidate in (root / dataset / name, root / name):
        if candidate.is_file():
            return candidate
    return None


def dataset_file(
    dataset: str,
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    download: bool = True,
    base_url: str | None = None,
    progress: bool | None = None,
) -> Path:
    """Path of one verified file of a dataset, e.g. ``dataset_file("sst2", "dev.tsv")``.

    ``data_dir`` and ``$SEQLAB_DATA`` are tried first (see the module
    docstring); a ``data_dir`` that lacks the file is an error, and so is a
    ``$SEQLAB_DATA`` that is not a folder or that holds the dataset's folder
    but not the file. Only then the cache is used, downloading when
    ``download`` is true.
    """
    src = _source(dataset)
    remote = src.file(name)

    if data_dir is not None:
        path = _local_file(Path(data_dir).expanduser(), dataset, name)
        if path is None:
            raise DataError(
                f"{name} of dataset {dataset!r} not found in {data_dir} "
                f"(looked for {Path(data_dir) / dataset / name} and {Path(data_dir) / name})"
            )
        verify_file(path, remote.sha256)
        return path

    env = os.environ.get("SEQLAB_DATA")
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():  # a typo must not silently turn into a download
            raise DataError(f"$SEQLAB_DATA={env} does not exist or is not a folder (unset it to download "
                            f"into the cache)")
        path = _local_file(root, dataset, name)
        if path is not None:
            verify_file(path, remote.sha256)
            return path
        if (root / dataset).is_dir():
            raise DataError(f"$SEQLAB_DATA={env}: {root / dataset} has no {name}")
        # The folder holds other datasets only: fall through to the cache.

    target = cache_dir() / dataset / name
    if target.is_file():
        try:
            verify_file(target, remote.sha256)
            return target
        except ChecksumError:
            # The cache is ours: a file damaged after its download is refetched.
            target.unlink(missing_ok=True)
    if not download:
        raise DataError(f"{target} is missing and download=False")
    fetch(dataset, names=[name], base_url=base_url, progress=progress)
    return target


def dataset_dir(
    dataset: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    download: bool = True,
    base_url: str | None = None,
    progress: bool | None = None,
) -> Path:
    """Folder holding every verified file of ``dataset`` (resolved like `dataset_file`)."""
    paths = [
        dataset_file(dataset, f.name, data_dir, download=download, base_url=base_url, progress=progress)
        for f in _source(dataset).files
    ]
    return paths[0].parent


# ---------------------------------------------------------------- download


def _url(src: DatasetSource, remote: RemoteFile, base_url: str | None) -> str:
    """Canonical URL, or ``{mirror}/{dataset}/{source}`` for a mirror."""
    mirror = base_url or os.environ.get("SEQLAB_DATA_URL")
    if mirror:
        return f"{mirror.rstrip('/')}/{src.name}/{remote.source}"
    return src.base_url + remote.source


def fetch(
    dataset: str,
    names: list[str] | None = None,
    *,
    base_url: str | None = None,
    progress: bool | None = None,
) -> Path:
    """Download (some of) a dataset's files into the cache; returns its cache folder.

    Each source is downloaded once even when several files come from it (the
    SST-2 zip). Files already in the cache with the right checksum are kept.
    ``progress`` shows a tqdm bar on stderr; ``None`` means only on a terminal.
    """
    src = _source(dataset)
    folder = cache_dir() / dataset
    folder.mkdir(parents=True, exist_ok=True)
    wanted = [
        f for f in (src.file(n) for n in (names or [f.name for f in src.files]))
        if not _cached_ok(folder / f.name, f.sha256)
    ]
    if progress is None:
        progress = sys.stderr.isatty()

    by_source: dict[str, list[RemoteFile]] = {}
    for remote in wanted:
        by_source.setdefault(remote.source, []).append(remote)
    for source, remotes in by_source.items():
        if remotes[0].member is not None:
            # One archive download yields all its files (SST-2's train and dev).
            remotes[:] = [f for f in src.files if f.source == source]
    for remotes in by_source.values():
        url = _url(src, remotes[0], base_url)
        if remotes[0].member is not None:
            _fetch_zip(url, folder, remotes, progress)
        else:
            (remote,) = remotes
            with open_url(url) as (response, total):
                stream = read_chunks(response, total, progress, remote.source)
                if remote.gunzip:
                    stream = gunzip(stream, url)
                _save_verified(stream, folder / remote.name, remote.sha256, url)
    return folder


def _cached_ok(path: Path, expected: str) -> bool:
    return path.is_file() and sha256_file(path) == expected


def _save_verified(chunks: Iterator[bytes] | BinaryIO, target: Path, expected: str, origin: str) -> None:
    """Write chunks to a temp file beside ``target``, check sha256, rename into place.

    On a mismatch (or any error) the temporary file is deleted, so nothing
    unverified ever sits at ``target``.
    """
    if hasattr(chunks, "read"):
        stream = chunks
        chunks = iter(lambda: stream.read(CHUNK), b"")
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                h.update(chunk)
                f.write(chunk)
        actual = h.hexdigest()
        if actual != expected:
            raise ChecksumError(
                f"{target.name} from {origin}: sha256 is {actual} but {expected} was expected; "
                f"the download was deleted"
            )
        os.replace(tmp, target)
        st = target.stat()  # remember the digest just computed: no second hash on first use
        _VERIFIED[(str(target.resolve()), st.st_size, st.st_mtime_ns)] = actual
    finally:
        tmp.unlink(missing_ok=True)


# ---------------------------------------------------------------- zip archives


def _fetch_zip(url: str, folder: Path, remotes: list[RemoteFile], progress: bool) -> None:
    """Download a zip to a temp file in ``folder`` and extract the wanted members, verified."""
    fd, tmp_name = tempfile.mkstemp(prefix=".download.", suffix=".zip", dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f, open_url(url) as (response, total):
            for chunk in read_chunks(response, total, progress, PurePosixPath(url).name):
                f.write(chunk)
        try:
            zf = zipfile.ZipFile(tmp)
        except zipfile.BadZipFile as e:
            raise DataError(f"{url}: not a valid zip file ({e})") from e
        with zf:
            # Check every name, not only the wanted ones: an archive carrying a
            # path-escaping member is hostile and none of it is trusted.
            for info in zf.infolist():
                safe_member_path(folder, info.filename)
            names = set(zf.namelist())
            for remote in remotes:
                assert remote.member is not None
                if remote.member not in names:
                    raise DataError(f"{url}: the archive has no member {remote.member!r}")
                with zf.open(remote.member) as member:
                    _save_verified(member, folder / remote.name, remote.sha256, f"{url}!{remote.member}")
    finally:
        tmp.unlink(missing_ok=True)


def clear_verification_cache() -> None:
    """Forget memoised checksums (tests that rewrite files in place use it)."""
    _VERIFIED.clear()


__all__ = [
    "REGISTRY",
    "DatasetSource",
    "RemoteFile",
    "cache_dir",
    "clear_verification_cache",
    "dataset_dir",
    "dataset_file",
    "fetch",
    "safe_member_path",
    "sha256_file",
    "verify_file",
]
