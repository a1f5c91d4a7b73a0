"""The audit trail in PostgreSQL: ``chat_audit`` (resets, persona and scope changes) read
together with ``clear_audit`` (clears)."""

from __future__ import annotations

import time

from bot.storage.audit import check_change, clear_detail
from bot.storage.postgres.part import Part
from bot.storage.postgres.turns import clean_text
from bot.storage.values import AuditAction, AuditEntry

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


class PostgresAudit(Part):
    async def record_change(
        self, chat_key: str, actor_id: str, actor_name: str, action: AuditAction, detail: str
    ) -> None:
        check_change(action)
        async with self._db.acquire() as conn:  # one insert: atomic on its own
            await conn.execute(
                "INSERT INTO chat_audit (chat_key, actor_id, actor_name, action, detail, at)"
                " VALUES ($1, $2, $3, $4, $5, $6)",
                chat_key,
                actor_id,
                clean_text(actor_name),
                str(action),
                clean_text(detail),
                time.time(),
            )

    async def audit(self, chat_key: str | None = None) -> list[AuditEntry]:
        where, args = ("WHERE chat_key = $1", (chat_key,)) if chat_key is not None else ("", ())
        async with self._db.acquire() as conn:
            rows = await conn.fetch(_AUDIT_SQL.format(where=where), *args)
        return [
            AuditEntry(
                at=float(row["at"]),
                chat_key=row["chat_key"],
                action=AuditAction(row["action"]),
                actor_id=row["actor_id"],
                actor_name=row["actor_name"],
                detail=(
                    clear_detail(int(row["turns"]), int(row["messages"]))
                    if row["action"] == "clear"
                    else row["detail"]
                ),
                conversation_key=row["conv_key"],
            )
            for row in rows
        ]
