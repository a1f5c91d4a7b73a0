"""The audit trail: ``chat_audit`` (resets, persona and scope changes) read together with
``clear_audit`` (clears). :class:`bot.storage.audit.AuditTrail`."""

from __future__ import annotations

import time

from bot.storage.audit import check_change, clear_detail
from bot.storage.sql.seam import Database
from bot.values import AuditAction, AuditEntry

# Clears first among entries of the same moment (kind 0), then by id within each table.
_AUDIT_SQL = """
SELECT at, chat_key, action, actor_id, actor_name, detail, conv_key, turns, messages FROM (
    SELECT at, chat_key, 'clear' AS action, actor_id, actor_name, '' AS detail,
        '' AS conv_key, deleted_turns AS turns, deleted_messages AS messages, 0 AS kind, id
    FROM clear_audit {where}
    UNION ALL
    SELECT at, chat_key, action, actor_id, actor_name, detail, conv_key, 0, 0, 1, id
    FROM chat_audit {where}
) AS entries ORDER BY at, kind, id
"""


class Audit:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record_change(
        self, chat_key: str, actor_id: str, actor_name: str, action: AuditAction, detail: str
    ) -> None:
        check_change(action)
        text = self._db.dialect.text
        await self._db.execute(  # one insert: atomic on its own
            "INSERT INTO chat_audit (chat_key, actor_id, actor_name, action, detail, at)"
            " VALUES ($1, $2, $3, $4, $5, $6)",
            chat_key, actor_id, text(actor_name), str(action), text(detail), time.time(),
        )  # fmt: skip

    async def audit(self, chat_key: str | None = None) -> list[AuditEntry]:
        where, args = ("WHERE chat_key = $1", (chat_key,)) if chat_key is not None else ("", ())
        rows = await self._db.fetch(_AUDIT_SQL.format(where=where), *args)
        return [
            AuditEntry(
                at=float(at),
                chat_key=str(chat),
                action=AuditAction(action),
                actor_id=str(actor_id),
                actor_name=str(actor_name),
                detail=clear_detail(int(turns), int(messages)) if action == "clear" else detail,
                conversation_key=str(conv),
            )
            for at, chat, action, actor_id, actor_name, detail, conv, turns, messages in rows
        ]
