"""Catch-up digests (``/catchup``): what a group said while someone was away, summarised from
what the bot may read of that conversation, in bounded model calls whose cost is booked like a
turn's. ``span`` (what is asked for, and the messages it covers), ``lines`` (the transcript as
quoted lines within a token budget, in chunks), ``digest`` (one call, or map-reduce),
``desk`` (where one may be made, budgets, the reply; the command and the admin API's entry).
"""

from __future__ import annotations

from bot.conversation.catchup.desk import (
    CATCHUP_COMMAND,
    CatchUp,
    CatchupReport,
    add_catchup_command,
    quiet,
)

__all__ = ["CATCHUP_COMMAND", "CatchUp", "CatchupReport", "add_catchup_command", "quiet"]
