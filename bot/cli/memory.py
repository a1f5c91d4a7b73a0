"""``python -m bot memory embed``: every memory and old message given its vector, now.

What the bot does in the background at start (:mod:`bot.memory.backfill`), in the foreground,
with a progress bar on a terminal (:class:`~bot.cli.progress.TerminalProgress`); counts at the
end either way. For a deployment switching embeddings on (``memory.embeddings.local: true``
or a model) that wants recall by meaning everywhere before it starts the bot.
"""

from __future__ import annotations

import sys

from bot.cli.progress import NoProgress, TerminalProgress
from bot.config import Settings
from bot.errors import ConfigError
from bot.llm.embeddings import make_embedder
from bot.memory.backfill import BackfillProgress, backfill
from bot.memory.store import MemoryStore
from bot.storage import open_storage
from bot.text import counted

__all__ = ["memory_command"]


async def memory_command(settings: Settings) -> int:
    settings.require_variables("memory", *(() if settings.memory.embeddings.local else ("llm",)))
    embeddings = settings.memory.embeddings
    if not embeddings.enabled:
        raise ConfigError(
            "memory.embeddings is off: nothing to embed",
            fix="set memory.embeddings.local: true (or memory.embeddings.model) in the config",
        )
    embedder = make_embedder(embeddings, settings.llm)
    progress: BackfillProgress = (
        TerminalProgress(sys.stderr) if sys.stderr.isatty() else NoProgress()
    )
    try:
        async with open_storage(settings) as store:
            memories = MemoryStore(store, embedder)
            try:
                counts = await backfill(memories, await store.conversations(), progress)
            finally:
                await memories.aclose()
    finally:
        await embedder.close()
    sys.stdout.write(
        f"{counted(counts.memories, 'memory', 'memories')} and"
        f" {counted(counts.messages, 'old message')} in"
        f" {counted(counts.conversations, 'conversation')} embedded with {embedder.model}\n"
    )
    return 0
