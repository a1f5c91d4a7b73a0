"""Edited messages: an edit replaces a message the bot has not started on; after that it is
context for the next answer, never answered again.

* The original still **waits** (admitted, queued for its conversation's lock): the turn reads
  the latest text when it starts, so the edited version is answered once, in the original's
  place, and the original never is.
* The original was **overheard** and still waits to give context: its stored text is replaced.
  Even when the edit now mentions the bot it is not answered: people rarely expect a bot to
  answer an edit, and an answer to a message minutes old would land out of place.
* Otherwise -- the original was answered, is being answered, already joined a turn as context,
  or was never kept -- the edit is kept as context marked ``[edited]`` for the conversation's
  next answer, by the rules of overheard chatter (bounded, aged out, ``history.context_messages``
  above zero), in private chats too.

Which platform message is which is the adapter's business; here a message is its conversation
key and ``ChatContext.message_id``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from enum import StrEnum

from bot.context import ChatContext
from bot.conversation.admission import Admission
from bot.conversation.locks import KeyedLocks
from bot.conversation.overheard import Overhearing
from bot.storage.overheard import OverheardStore

__all__ = ["EDITED_MARK", "EditOutcome", "Edits", "Waiting"]

EDITED_MARK = "[edited] "


class EditOutcome(StrEnum):
    REPLACED = "replaced"  # the waiting original is answered with the edited text instead
    CHATTER_REPLACED = "chatter-replaced"  # the overheard original now reads the edited text
    CONTEXT = "context"  # kept as "[edited] ..." context for the next answer
    DROPPED = "dropped"  # nothing kept (context off, no access, empty or huge text)


@dataclass(slots=True)
class Waiting:
    """A message in line for its conversation; ``edited``: the latest edit's text, if any."""

    edited: str | None = None


class Edits:
    def __init__(
        self,
        store: OverheardStore,
        overhearing: Overhearing,
        admission: Admission,
        locks: KeyedLocks,
    ) -> None:
        self.store = store
        self.overhearing = overhearing
        self.admission = admission
        self.locks = locks
        self._waiting: dict[tuple[str, str], Waiting] = {}

    @contextlib.asynccontextmanager
    async def waiting(self, key: str, message_id: str | None) -> AsyncIterator[Waiting | None]:
        """Editable while in line: enter it on arrival (it does not suspend), and call
        :meth:`start` once the conversation is held."""
        if message_id is None:
            yield None
            return
        slot = Waiting()
        self._waiting[(key, message_id)] = slot
        try:
            yield slot
        finally:
            if self._waiting.get((key, message_id)) is slot:
                del self._waiting[(key, message_id)]

    def start(self, key: str, message_id: str | None, slot: Waiting | None, text: str) -> str:
        """The text the turn answers: the latest edit's, checked like any message (a
        ``UserFacingError`` when empty or too long), if one arrived while it waited."""
        if slot is None or message_id is None:
            return text
        if self._waiting.get((key, message_id)) is slot:
            del self._waiting[(key, message_id)]  # from here on an edit is context
        return text if slot.edited is None else self.admission.message_text(slot.edited)

    def replace_waiting(self, key: str, message_id: str, text: str) -> bool:
        slot = self._waiting.get((key, message_id))
        if slot is None:
            return False
        slot.edited = text
        return True

    async def apply(
        self,
        ctx: ChatContext,
        key: str,
        text: str,
        allows: Callable[[ChatContext], bool],
        *,
        context: bool = True,
    ) -> EditOutcome:
        """What the edit of ``ctx.message_id`` to ``text`` changes (see the module);
        ``context=False``: it only replaces a waiting message, nothing is kept."""
        if ctx.message_id is not None and self.replace_waiting(key, ctx.message_id, text):
            return EditOutcome.REPLACED
        kept = self.overhearing.worth_keeping(ctx, text, edit=True) if context else None
        if kept is None or not allows(ctx):
            return EditOutcome.DROPPED
        await self.admission.arrive(key)  # in arrival order with the conversation's turns
        async with self.locks.hold(key):  # after the answer being written, if there is one
            if ctx.message_id is not None and await self.store.replace_overheard(
                key, ctx.message_id, kept
            ):
                return EditOutcome.CHATTER_REPLACED
            await self.overhearing.record(ctx, key, EDITED_MARK + kept)
        return EditOutcome.CONTEXT
