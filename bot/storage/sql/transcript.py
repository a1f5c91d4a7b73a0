"""A conversation's transcript (:class:`bot.storage.transcript.Transcripts`).

Two short reads, each walking an index backwards from the newest row: the turns after the last
reset (``context`` rows among them) by ``(conv_key, id)`` with a constant LIMIT (the dialect's
conversation page), and the chatter still waiting in ``overheard``, bounded per conversation
anyway. They are merged here by when each message was said.
"""

from __future__ import annotations

import heapq

from bot.storage.answers import final_text
from bot.storage.sql.seam import Database, Row
from bot.storage.sql.summaries import LAST_ID
from bot.storage.transcript import Said

__all__ = ["TranscriptRows"]

_AFTER_RESET = "coalesce((SELECT after_turn_id FROM resets WHERE conv_key = $1), 0)"
_TURN_COLUMNS = "id, user_id, user_name, user_text, answer, status, created_at"
_OVERHEARD = (
    "SELECT id, user_id, user_name, text, created_at FROM overheard"
    " WHERE conv_key = $1 AND created_at >= $2 ORDER BY id DESC LIMIT $3"
)


class TranscriptRows:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def said(self, conversation_key: str, since: float, limit: int) -> list[Said]:
        limit = max(int(limit), 0)
        if limit == 0:
            return []
        page = self._db.dialect.conversation_page(
            _TURN_COLUMNS, limit=limit, after=_AFTER_RESET, before="$2", newest_first=True
        )
        turns = await self._db.fetch(
            f"SELECT * FROM ({page}) AS newest WHERE created_at >= $3",
            conversation_key,
            LAST_ID,
            since,
        )
        waiting = await self._db.fetch(_OVERHEARD, conversation_key, since, limit)
        # keyed (when, which table, row id): the order said; a turn first at an equal time
        keyed = [((float(row[6]), 0, int(row[0])), _turn(row)) for row in turns]
        keyed += [((float(row[4]), 1, int(row[0])), _chatter(row)) for row in waiting]
        newest = heapq.nlargest(limit, keyed, key=lambda pair: pair[0])
        return [said for _, said in reversed(newest)]


def _turn(row: Row) -> Said:
    _, user_id, name, text, answer, status, at = row
    shown = final_text(answer) if status == "answered" else ""  # undelivered: never seen
    return Said(str(user_id), str(name), str(text), float(at), status != "context", shown)


def _chatter(row: Row) -> Said:
    _, user_id, name, text, at = row
    return Said(str(user_id), str(name), str(text), float(at), addressed=False)
