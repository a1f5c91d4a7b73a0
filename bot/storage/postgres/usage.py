"""The usage ledger in PostgreSQL: :class:`bot.storage.sql.ledger.UsageBook` with the budget
figures of concurrent turns read in one statement (:mod:`.batch`; a read batches as a write
does). Each turn's figures are read after it asked, as before: nothing is cached, so budgets
hold across replicas as they did."""

from __future__ import annotations

from collections.abc import Sequence

from bot.storage.postgres.batch import Batch, columns
from bot.storage.postgres.connection import Database, PostgresSeam
from bot.storage.sql.ledger import UsageBook

__all__ = ["PostgresUsage"]

_SUM = "coalesce(sum(u.prompt_tokens + u.completion_tokens), 0)"

# Per asked (day, chat, user): the whole bot's tokens that day (once per distinct day), the
# chat's, and the user's in every chat of the platform; rows in the order asked.
_BUDGET_FIGURES = (
    "WITH r AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])"
    " WITH ORDINALITY AS r(day, chat_key, user_id, prefix, n)),"
    f" totals AS (SELECT d.day, (SELECT {_SUM} FROM usage_daily AS u WHERE u.day = d.day)"
    " AS total FROM (SELECT DISTINCT day FROM r) AS d)"
    f" SELECT t.total, (SELECT {_SUM} FROM usage_daily AS u WHERE u.day = r.day"
    " AND u.chat_key = r.chat_key),"
    f" (SELECT {_SUM} FROM usage_daily AS u WHERE u.day = r.day AND u.user_id = r.user_id"
    " AND starts_with(u.chat_key, r.prefix))"
    " FROM r JOIN totals AS t ON t.day = r.day ORDER BY r.n"
)

_Asked = tuple[str, str, str, str]  # day, chat_key, platform, user_id
_Figures = tuple[int, int, int]


class PostgresUsage(UsageBook):
    def __init__(self, db: Database) -> None:
        super().__init__(PostgresSeam(db))
        self._figures: Batch[_Asked, _Figures] = Batch(self._many, self._one)

    async def budget_figures(
        self, day: str, chat_key: str, platform: str, user_id: str
    ) -> tuple[int, int, int]:
        return await self._figures.run((day, chat_key, platform, user_id))

    async def _one(self, asked: _Asked) -> _Figures:
        return await super().budget_figures(*asked)

    async def _many(self, asked: Sequence[_Asked]) -> list[_Figures]:
        rows = [(day, chat, user, f"{platform}:") for day, chat, platform, user in asked]
        found = await self._db.fetch(_BUDGET_FIGURES, *columns(rows))
        return [(int(total), int(chat), int(user)) for total, chat, user in found]
