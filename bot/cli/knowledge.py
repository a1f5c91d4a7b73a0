"""``python -m bot knowledge add|list|remove|reindex``: a knowledge base's documents from the
shell.

``add BASE PATH...`` reads files and folders (recursively, the formats
:data:`bot.knowledge.formats.FORMATS` names), each hashed, read and chunked before anything is
stored: an unchanged file is skipped, a changed one replaces its chunks, a refused one is
reported with its reason and changes nothing. The source a document is known by is its path
relative to the folder given (a file given by itself: its name). On a terminal a progress bar
counts the files; otherwise (a pipe, a log) each file gets its ``[n/N] source: outcome`` line.

With embeddings configured (``memory.embeddings``), ``add`` and ``reindex`` then give every
chunk without a vector of the current model its vector.

``reindex BASE`` rebuilds the base's search index from its stored chunks
(:meth:`~bot.storage.knowledge.KnowledgeDocuments.reindex_base`): after a storage copy or a
restore, or a change of how text is indexed.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from bot.cli.progress import TerminalProgress
from bot.config import Settings
from bot.errors import ConfigError
from bot.knowledge.formats import FORMATS, DocumentError, check_size
from bot.knowledge.prepare import content_hash, prepare_document
from bot.llm.tokens import TokenCounter
from bot.storage import Storage, open_storage
from bot.storage.knowledge import NewDocument
from bot.text import counted

__all__ = ["knowledge_command"]


@dataclass
class _Found:
    files: list[tuple[str, Path]]  # (source, path), in a stable order
    skipped: int = 0  # files in the folders given that are not a known format


def _files(paths: list[str], url: str | None = None) -> _Found:
    """Every document under ``paths``; hidden files and folders (``.git``, ``.env.txt``) are
    not read from a folder. With ``url``, each source is its address there (a file given by
    itself with a URL not ending in ``/``: that URL)."""
    found = _Found([])
    for given in map(Path, paths):
        if not given.is_dir():
            alone = url is not None and not url.endswith("/") and len(paths) == 1
            found.files.append((url if alone and url else _at(url, given.name), given))
            continue
        for path in sorted(given.rglob("*")):
            relative = path.relative_to(given)
            if not path.is_file() or any(part.startswith(".") for part in relative.parts):
                continue
            if path.suffix.lower() not in FORMATS:
                found.skipped += 1
                continue
            found.files.append((_at(url, relative.as_posix()), path))
    return found


def _at(url: str | None, source: str) -> str:
    return source if url is None else f"{url.rstrip('/')}/{quote(source)}"


def _same_source(files: list[tuple[str, Path]]) -> dict[Path, str]:
    """Files of one run that would be known by the same source (one would replace the other):
    each but the first, with the source they share."""
    seen: set[str] = set()
    clashes: dict[Path, str] = {}
    for source, path in files:
        if source in seen:
            clashes[path] = source
        seen.add(source)
    return clashes


def _published_at(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.username:
        raise ConfigError(
            "--url takes an http(s) address, with no user name or secret in it",
            fix="give the address the files are published under: https://docs.example.org/guide/",
        )
    return url


class _Told:
    """How ``add`` tells each file's outcome: a progress bar on a terminal, else a line each."""

    def __init__(self, base: str, total: int) -> None:
        self._total, self._number = total, 0
        self._bar = TerminalProgress(sys.stderr) if sys.stderr.isatty() else None
        if self._bar is not None:
            self._bar.start(base, total)

    def done(self, source: str, outcome: str) -> None:
        self._number += 1
        if self._bar is not None:
            self._bar.advance(1)
        else:
            sys.stderr.write(f"[{self._number}/{self._total}] {source}: {outcome}\n")

    def refused(self, reason: DocumentError) -> None:
        self._number += 1
        if self._bar is not None:
            self._bar.note(f"refused: {reason}")  # kept on screen, above the bar
            self._bar.advance(1)
        else:
            sys.stderr.write(f"refused: {reason}\n")

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.finish()


async def _add(args: argparse.Namespace, settings: Settings, store: Storage) -> int:
    found = _files(args.paths, _published_at(args.url))
    if not found.files:
        known = ", ".join(sorted(FORMATS))
        sys.stderr.write(f"no documents found under {' '.join(args.paths)} (known: {known})\n")
        return 1
    told = _Told(args.base, len(found.files))
    try:
        outcomes, failed = await _add_files(args.base, found.files, settings, store, told)
    finally:
        told.finish()  # the bar's line ends before the summary or any error
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
    skipped = f"; {found.skipped} skipped (not a known format)" if found.skipped else ""
    sys.stdout.write(f"{args.base}: {summary or 'nothing added'}; {failed} refused{skipped}\n")
    return 1 if failed else 0


async def _add_files(
    base: str, files: list[tuple[str, Path]], settings: Settings, store: Storage, told: _Told
) -> tuple[dict[str, int], int]:
    """Each file stored (or skipped, or refused); returns the outcomes counted and the refused."""
    options, count = settings.knowledge, TokenCounter(settings.llm.model).count_text
    outcomes: dict[str, int] = {}
    failed = 0
    stored = {d.source: d.content_hash for d in await store.list_documents(base)}
    clashes = _same_source(files)
    for source, path in files:
        try:
            if path in clashes:
                raise DocumentError(
                    f"{path}: another file of this run is also known as {source!r}; add their"
                    " folder instead, so each keeps its path"
                )
            if not path.is_file():
                raise DocumentError(f"{path}: no such file")
            check_size(source, path.stat().st_size, options.max_file_bytes)  # before reading
            data = path.read_bytes()
            if stored.get(source) == content_hash(data):  # unchanged: not parsed again
                outcomes["unchanged"] = outcomes.get("unchanged", 0) + 1
                told.done(source, "unchanged")
                continue
            prepared = prepare_document(
                source, data, max_bytes=options.max_file_bytes,
                chunk_tokens=options.chunk_tokens, overlap=options.chunk_overlap, count=count,
            )  # fmt: skip
        except DocumentError as refused:
            failed += 1
            told.refused(refused)
            continue
        result = await store.put_document(
            NewDocument(
                base, source, prepared.content_hash, prepared.format, "cli", prepared.chunks
            )
        )
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        told.done(source, f"{result.outcome}, {counted(result.document.chunks, 'chunk')}")
    return outcomes, failed


async def _list(args: argparse.Namespace, store: Storage) -> int:
    documents = await store.list_documents(args.base)
    for document in documents:
        sys.stdout.write(
            f"{document.source}\t{document.format}\t{counted(document.chunks, 'chunk')}"
            f"\t{document.tokens} tokens\t{document.content_hash[:19]}\n"
        )
    sys.stdout.write(f"{args.base}: {counted(len(documents), 'document')}\n")
    chats = await store.base_bindings(args.base)
    if chats:
        sys.stdout.write(f"bound by /knowledge bind in: {', '.join(chats)}\n")
    return 0


async def _unbind(args: argparse.Namespace, store: Storage) -> int:
    """Take back bindings made in chats (a base no longer ``shared``: its old bindings stay
    until taken back here)."""
    if args.all == (args.chat is not None):
        sys.stderr.write("name one chat (as `knowledge list` shows it), or give --all\n")
        return 2
    chats = await store.base_bindings(args.base) if args.all else [args.chat]
    gone = [chat for chat in chats if await store.unbind_base(chat, args.base)]
    sys.stdout.write(f"{args.base}: unbound from {counted(len(gone), 'chat')}\n")
    return 0 if gone or args.all else 1


async def _remove(args: argparse.Namespace, store: Storage) -> int:
    if args.all == (args.source is not None):
        sys.stderr.write("name one document to remove, or give --all for the whole base\n")
        return 2
    if args.all:
        removed = await store.remove_base(args.base)
        sys.stdout.write(f"{args.base}: removed {counted(removed, 'document')}\n")
        return 0
    if await store.remove_document(args.base, args.source):
        sys.stdout.write(f"{args.base}: removed {args.source}\n")
        return 0
    sys.stderr.write(f"{args.base}: no document {args.source!r} (see `knowledge list`)\n")
    return 1


async def _reindex(args: argparse.Namespace, store: Storage) -> int:
    documents = await store.list_documents(args.base)
    chunks = await store.reindex_base(args.base)
    sys.stdout.write(
        f"{args.base}: reindexed {counted(chunks, 'chunk')}"
        f" of {counted(len(documents), 'document')}\n"
    )
    return 0


async def knowledge_command(args: argparse.Namespace, settings: Settings) -> int:
    declared = settings.knowledge.bases
    if args.base not in declared and args.knowledge_command not in ("list", "remove", "unbind"):
        names = ", ".join(declared) or "none"
        raise ConfigError(
            f"no knowledge base {args.base!r} (declared: {names})",
            fix=f"declare it in the config: knowledge: {{bases: {{{args.base}: {{}}}}}}",
        )
    if args.base not in declared:  # a base taken out of config: its documents may linger
        sys.stderr.write(f"{args.base} is not declared in the config: never searched\n")
    async with open_storage(settings) as store:
        if args.knowledge_command == "add":
            status = await _add(args, settings, store)
        elif args.knowledge_command == "list":
            return await _list(args, store)
        elif args.knowledge_command == "reindex":
            status = await _reindex(args, store)
        elif args.knowledge_command == "unbind":
            return await _unbind(args, store)
        else:
            return await _remove(args, store)
        return max(status, await _embed(settings, store))


async def _embed(settings: Settings, store: Storage) -> int:
    """With embeddings configured, chunks without a vector get one now (the bot would make
    them at its next start anyway); an endpoint that fails is reported, the documents stay."""
    embeddings = settings.memory.embeddings
    if not settings.memory.enabled or not embeddings.enabled:
        return 0
    from bot.errors import LLMError
    from bot.knowledge.embedding import ChunkEmbedding
    from bot.llm.embeddings import make_embedder

    embedder = make_embedder(embeddings, settings.llm)
    try:
        filled = await ChunkEmbedding(store, embedder).fill()
    except LLMError as exc:
        sys.stderr.write(f"chunks not embedded (the bot retries at start): {exc}\n")
        return 1
    finally:
        await embedder.close()
    if filled:
        sys.stdout.write(f"embedded {counted(filled, 'chunk')} ({embedder.model})\n")
    return 0
