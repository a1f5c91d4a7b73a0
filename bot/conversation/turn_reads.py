"""What a turn reads before its prompt: whether the model is up, the budgets, the prompt's rows.

Where reads wait for a server (PostgreSQL) they go together: one wait for all of them. Where
they are answered in this process (SQLite: from memory, or a statement run on the loop's
thread) they run one after the other: a task per read would cost more than the reads (issue
31). Whether the model is up is known without a read unless replicas share the breakers; it
is told after the reads either way, so a refused turn has stored nothing.
"""

from __future__ import annotations

import asyncio

from bot.context import ChatContext
from bot.conversation.admission import Admission
from bot.llm.client import LLMClient
from bot.storage.prompt_windows import PromptWindows
from bot.values import PromptRows

__all__ = ["read_for_turn"]


async def read_for_turn(
    ctx: ChatContext,
    key: str,
    *,
    llm: LLMClient,
    admission: Admission,
    store: PromptWindows,
    max_turns: int,
    overheard_since: float | None,
) -> PromptRows:
    """Raises what admission's budgets or a downed model raise; else the prompt's rows."""
    check = llm.check_available()
    available = None if check is None else asyncio.ensure_future(check)
    try:
        if store.reads_wait:
            _, rows = await asyncio.gather(  # one wait; window, chatter, mark: one read
                admission.check_budgets(ctx),
                store.load_prompt_rows(key, max_turns, overheard_since),
            )
        else:
            await admission.check_budgets(ctx)
            rows = await store.load_prompt_rows(key, max_turns, overheard_since)
    except BaseException:  # its outcome no longer matters
        if available is not None:
            available.add_done_callback(lambda done: done.cancelled() or done.exception())
        raise
    if available is not None:
        await available  # known to be down: nothing stored
    return rows
