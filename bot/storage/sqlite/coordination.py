"""The inbox, leases and shared limits (:mod:`bot.storage.coordination`) in SQLite.

Two processes may share the file, so every change is one statement on the writer (SQLite takes
the file's write lock for the whole statement, so a read inside it cannot go stale) or, where it
takes two, one ``BEGIN IMMEDIATE`` transaction. ``now`` is the database's clock: SQLite holds it
still for the length of a statement, so every use of :data:`NOW` in one statement agrees.
"""

from __future__ import annotations

from bot.storage.sql.coordination import CoordinationRows
from bot.storage.sqlite.connection import NOW

__all__ = ["SQLiteCoordination"]

_CLAIM = f"""
UPDATE inbox SET owner = $2, lease_until = {NOW} + $3, attempts = attempts + 1
WHERE id IN (
    SELECT head.id FROM inbox AS head
    WHERE head.source = $1 AND head.done_at IS NULL
        AND (head.lease_until IS NULL OR head.lease_until <= {NOW})
        AND NOT EXISTS (
            SELECT 1 FROM inbox AS earlier
            WHERE earlier.source = head.source AND earlier.lane = head.lane
                AND earlier.done_at IS NULL AND earlier.update_id < head.update_id)
    ORDER BY head.id LIMIT $4)
RETURNING id, source, update_id, lane, payload, attempts
"""

_REFILLED = (
    "min(excluded.burst, rate_buckets.tokens"
    f" + ({NOW} - rate_buckets.updated) * excluded.per_second)"
)
_TAKE = f"""
INSERT INTO rate_buckets (key, tokens, updated, per_second, burst, refusals)
VALUES ($1, $3 - 1.0, {NOW}, $2, $3, 0)
ON CONFLICT (key) DO UPDATE SET
    tokens = CASE WHEN {_REFILLED} >= 1.0 THEN {_REFILLED} - 1.0 ELSE {_REFILLED} END,
    refusals = CASE WHEN {_REFILLED} >= 1.0 THEN 0 ELSE rate_buckets.refusals + 1 END,
    updated = {NOW}, per_second = excluded.per_second, burst = excluded.burst
RETURNING tokens, refusals
"""

_EXPIRED = f"flights.until <= {NOW}"
_CLAIM_FLIGHT = f"""
INSERT INTO flights (key, owner, until, refusals) VALUES ($1, $2, {NOW} + $3, 0)
ON CONFLICT (key) DO UPDATE SET
    owner = CASE WHEN {_EXPIRED} THEN excluded.owner ELSE flights.owner END,
    until = CASE WHEN {_EXPIRED} THEN excluded.until ELSE flights.until END,
    refusals = CASE WHEN {_EXPIRED} THEN 0 ELSE flights.refusals + 1 END
RETURNING refusals
"""

_REACHED = "breakers.failures + 1 >= $2"
_FAIL = f"""
INSERT INTO breakers (name, failures, open_until)
VALUES ($1, CASE WHEN 1 >= $2 THEN 0 ELSE 1 END,
    CASE WHEN 1 >= $2 THEN {NOW} + $3 ELSE 0.0 END)
ON CONFLICT (name) DO UPDATE SET
    failures = CASE WHEN {_REACHED} THEN 0 ELSE breakers.failures + 1 END,
    open_until = CASE WHEN {_REACHED} THEN {NOW} + $3 ELSE breakers.open_until END
RETURNING failures, open_until, max(open_until - {NOW}, 0.0)
"""


class SQLiteCoordination(CoordinationRows):
    """:class:`CoordinationRows` with SQLite's claims, amends, buckets, flights and breakers."""

    CLAIM, TAKE, CLAIM_FLIGHT, FAIL = _CLAIM, _TAKE, _CLAIM_FLIGHT, _FAIL

    async def inbox_amend(
        self, source: str, update_id: int, lane: str, subject: str, payload: str, amended: str
    ) -> bool:
        async with self.db.transaction() as tx:  # the write lock: no claim in between
            rows = await tx.fetch(
                "UPDATE inbox SET payload = $1 WHERE id = ("
                " SELECT id FROM inbox WHERE source = $2 AND lane = $3"
                " AND subject = $4 AND done_at IS NULL AND lease_until IS NULL"
                " ORDER BY update_id DESC LIMIT 1)"
                " AND NOT EXISTS (SELECT 1 FROM inbox WHERE source = $2"
                " AND update_id = $5) RETURNING id",
                amended,
                source,
                lane,
                subject,
                update_id,
            )
            if not rows:
                return False
            await tx.execute(
                "INSERT INTO inbox (source, update_id, lane, payload, created_at, done_at)"
                f" VALUES ($1, $2, $3, $4, {NOW}, {NOW})",
                source,
                update_id,
                lane,
                payload,
            )
        return True
