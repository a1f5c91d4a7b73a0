"""Doctor: each declared knowledge base, its documents and where it is searched.

A base with no documents, or one no chat searches, answers nothing and says so only here: the
bot would just never cite it. One row per base, read from the database the bot uses.
"""

from __future__ import annotations

from bot.config import Settings
from bot.doctor import Check, passed, warn
from bot.errors import StoreError
from bot.storage import open_storage
from bot.text import counted

__all__ = ["check_knowledge"]

NAME = "knowledge"


async def check_knowledge(settings: Settings) -> list[Check]:
    """No row without declared bases; else one a base (or one saying the database failed)."""
    bases = settings.knowledge.bases
    if not bases:
        return []
    rows: list[Check] = []
    try:
        async with open_storage(settings) as store:
            for base in bases:
                documents = await store.list_documents(base)
                chats = await store.base_bindings(base)
                presets = sum(base in preset.knowledge for preset in settings.chats)
                rows.append(_row(base, len(documents), sum(d.chunks for d in documents),
                                 presets, len(chats)))  # fmt: skip
    except StoreError as exc:
        return [warn(NAME, f"bases not read: {exc}", "see the database row")]
    return rows


def _row(base: str, documents: int, chunks: int, presets: int, chats: int) -> Check:
    held = f"{counted(documents, 'document')}, {counted(chunks, 'chunk')}"
    where = f"bound by {counted(presets, 'preset')} and in {counted(chats, 'chat')} by command"
    if not documents:
        return warn(
            NAME,
            f"{base}: empty ({where})",
            f"add documents: python -m bot knowledge add {base} PATH",
        )
    if not presets and not chats:
        return warn(
            NAME,
            f"{base}: {held}, searched in no chat",
            f"bind it: a chats: preset's knowledge: [{base}], or /knowledge bind {base} in a chat",
        )
    return passed(NAME, f"{base}: {held}; {where}")
