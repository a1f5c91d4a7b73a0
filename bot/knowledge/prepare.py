"""A file made ready to store: its content hash, its format and its chunks.

The hash is of the bytes as given (SHA-256), so re-adding an unchanged file is skipped and a
changed one replaces its chunks; reading and chunking happen before anything is stored, so a
refused file changes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from bot.knowledge.chunking import chunk_blocks
from bot.knowledge.formats import format_of, read_document
from bot.storage.knowledge import NewChunk

__all__ = ["PreparedDocument", "content_hash", "prepare_document"]


@dataclass(frozen=True)
class PreparedDocument:
    source: str  # the file name or URL it came from, as shown in citations
    content_hash: str  # "sha256:" + hex
    format: str
    chunks: tuple[NewChunk, ...]


def prepare_document(
    source: str,
    data: bytes,
    *,
    max_bytes: int,
    chunk_tokens: int,
    overlap: int,
    count: Callable[[str], int],
) -> PreparedDocument:
    """Read and chunk ``data`` (raises :class:`~bot.knowledge.formats.DocumentError`)."""
    blocks = read_document(source, data, max_bytes=max_bytes)
    chunks = chunk_blocks(blocks, max_tokens=chunk_tokens, overlap=overlap, count=count)
    return PreparedDocument(source, content_hash(data), format_of(source, data), tuple(chunks))


def content_hash(data: bytes) -> str:
    """What a stored document's ``content_hash`` holds: equal means unchanged."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
