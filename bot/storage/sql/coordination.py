"""The inbox, leases and shared limits both backends run alike (:mod:`bot.storage.coordination`).

Every method here is one statement (``prune_limits``: two, in one transaction), atomic on its
own; times are the database's (:attr:`Dialect.now`), read once per statement. What each
database words its own way, a subclass in ``bot.storage.<backend>.coordination`` provides: the
statements that claim lane heads, take a token, claim a flight and count a breaker failure
(run here), and amending an update.
"""

from __future__ import annotations

from typing import ClassVar

from bot.storage.coordination import INBOX_FOLDED, bucket_decision
from bot.storage.sql.seam import Database, fetchval
from bot.values import BreakerState, InboxItem, InboxProgress, RateDecision

__all__ = ["CoordinationRows"]


class CoordinationRows:
    CLAIM: ClassVar[str]  # $1 source, $2 owner, $3 lease seconds, $4 limit -> inbox rows
    TAKE: ClassVar[str]  # $1 key, $2 tokens a second, $3 burst -> (tokens, refusals)
    CLAIM_FLIGHT: ClassVar[str]  # $1 key, $2 owner, $3 seconds -> (refusals,)
    FAIL: ClassVar[str]  # $1 name, $2 threshold, $3 open seconds -> (failures, until, open for)

    def __init__(self, db: Database) -> None:
        self.db, self.now = db, db.dialect.now

    async def inbox_claim(
        self, source: str, owner: str, lease_seconds: float, limit: int
    ) -> list[InboxItem]:
        if limit <= 0:
            return []
        rows = await self.db.write(self.CLAIM, source, owner, lease_seconds, limit)
        items = [
            InboxItem(int(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4]), int(r[5]))
            for r in rows
        ]
        return sorted(items, key=lambda item: item.id)  # RETURNING keeps no order

    async def take_token(self, key: str, per_minute: float, burst: int) -> RateDecision:
        per_second = per_minute / 60.0
        ((tokens, refusals),) = await self.db.write(self.TAKE, key, per_second, max(1, burst))
        return bucket_decision(float(tokens), int(refusals), per_second)

    async def claim_flight(self, key: str, owner: str, seconds: float) -> tuple[bool, bool]:
        ((refusals,),) = await self.db.write(self.CLAIM_FLIGHT, key, owner, seconds)
        return refusals == 0, refusals == 1

    async def breaker_failure(self, name: str, threshold: int, open_seconds: float) -> BreakerState:
        ((failures, open_until, open_for),) = await self.db.write(
            self.FAIL, name, threshold, open_seconds
        )
        return BreakerState(int(failures), float(open_until), float(open_for))

    async def inbox_put(
        self, source: str, update_id: int, lane: str, payload: str, subject: str | None = None
    ) -> bool:
        rows = await self.db.write(
            "INSERT INTO inbox (source, update_id, lane, payload, subject, created_at)"
            f" VALUES ($1, $2, $3, $4, $5, {self.now})"
            " ON CONFLICT (source, update_id) DO NOTHING RETURNING id",
            source,
            update_id,
            lane,
            payload,
            subject,
        )
        return bool(rows)

    async def inbox_renew(self, owner: str, lease_seconds: float) -> int:
        return await self.db.execute(
            f"UPDATE inbox SET lease_until = {self.now} + $2"
            " WHERE owner = $1 AND done_at IS NULL AND lease_until IS NOT NULL",
            owner,
            float(lease_seconds),
        )

    async def inbox_done(self, item_id: int, owner: str, error: str | None = None) -> bool:
        return bool(
            await self.db.execute(
                f"UPDATE inbox SET done_at = {self.now}, lease_until = NULL, error = $3"
                " WHERE id = $1 AND owner = $2 AND done_at IS NULL AND lease_until IS NOT NULL",
                item_id,
                owner,
                error,
            )
        )

    async def inbox_release(self, owner: str) -> int:
        return await self.db.execute(
            "UPDATE inbox SET lease_until = NULL WHERE owner = $1 AND done_at IS NULL"
            " AND lease_until IS NOT NULL",
            owner,
        )

    async def inbox_pending(self, source: str) -> int:
        sql = "SELECT count(*) FROM inbox WHERE source = $1 AND done_at IS NULL"
        return int(await fetchval(self.db, sql, source))

    async def inbox_following(
        self, source: str, lane: str, after_update_id: int, limit: int
    ) -> list[InboxItem]:
        rows = await self.db.fetch(
            "SELECT id, source, update_id, lane, payload, attempts FROM inbox"
            " WHERE source = $1 AND lane = $2 AND update_id > $3 AND done_at IS NULL"
            " AND lease_until IS NULL ORDER BY update_id LIMIT $4",
            source,
            lane,
            after_update_id,
            max(int(limit), 0),
        )
        return [
            InboxItem(int(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4]), int(r[5]))
            for r in rows
        ]

    async def inbox_fold(self, item_id: int, into: int) -> bool:
        return bool(
            await self.db.execute(
                f"UPDATE inbox SET done_at = {self.now}, error = $2"
                " WHERE id = $1 AND done_at IS NULL AND lease_until IS NULL",
                item_id,
                f"{INBOX_FOLDED} {into}",
            )
        )

    async def inbox_progress(self, source: str, lane: str, subject: str) -> InboxProgress | None:
        rows = await self.db.fetch(
            "SELECT attempts, done_at, error FROM inbox WHERE source = $1 AND lane = $2"
            " AND subject = $3 ORDER BY update_id DESC LIMIT 1",
            source,
            lane,
            subject,
        )
        if not rows:
            return None
        attempts, done_at, error = rows[0]
        done = done_at is not None
        answered = done and (error is None or str(error).startswith(INBOX_FOLDED))
        return InboxProgress(int(attempts), done, answered)

    async def inbox_prune(self, older_than_seconds: float) -> int:
        return await self.db.execute(
            f"DELETE FROM inbox WHERE done_at IS NOT NULL AND done_at < {self.now} - $1",
            float(older_than_seconds),
        )

    async def acquire_lease(self, name: str, owner: str, seconds: float) -> bool:
        # One instant for the new lease and the old one's expiry (the clock CTE).
        rows = await self.db.write(
            f"WITH clock AS (SELECT {self.now} AS now)"
            " INSERT INTO leases AS l (name, owner, until)"
            " SELECT $1, $2, now + $3 FROM clock WHERE true"
            " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until"
            " WHERE l.owner = excluded.owner OR l.until <= (SELECT now FROM clock)"
            " RETURNING owner",
            name,
            owner,
            float(seconds),
        )
        return bool(rows)

    async def release_lease(self, name: str, owner: str) -> None:
        await self.db.execute("DELETE FROM leases WHERE name = $1 AND owner = $2", name, owner)

    async def lease_holder(self, name: str) -> str | None:
        sql = f"SELECT owner FROM leases WHERE name = $1 AND until > {self.now}"
        found = await fetchval(self.db, sql, name)
        return None if found is None else str(found)

    async def release_flight(self, key: str, owner: str) -> None:
        await self.db.execute("DELETE FROM flights WHERE key = $1 AND owner = $2", key, owner)

    async def breaker_success(self, name: str) -> None:
        await self.db.execute("DELETE FROM breakers WHERE name = $1", name)

    async def breaker_state(self, name: str) -> BreakerState:
        rows = await self.db.fetch(
            f"SELECT failures, open_until, {self.now} FROM breakers WHERE name = $1", name
        )
        if not rows:
            return BreakerState(0, 0.0)
        failures, open_until, now = rows[0]
        return BreakerState(
            int(failures), float(open_until), max(float(open_until) - float(now), 0.0)
        )

    async def prune_limits(self) -> int:
        async with self.db.transaction() as tx:
            buckets = await tx.execute(
                "DELETE FROM rate_buckets"
                f" WHERE tokens + ({self.now} - updated) * per_second >= burst"
            )
            flights = await tx.execute(f"DELETE FROM flights WHERE until <= {self.now}")
        return buckets + flights
