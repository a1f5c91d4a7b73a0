"""Usage reports: the per-day, per-chat, per-user token ledger as a table for people.

``cached`` is the part of ``prompt`` a provider's prompt cache served (billed at a discount), so
it is not added to ``total``."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from bot.values import BOT_USER, DailyUsage, Usage

_HEADER = ("day", "chat", "user", "turns", "prompt", "cached", "completion", "total")


def usage_table(rows: Sequence[DailyUsage]) -> str:
    """Aligned columns; each chat's day ends with an ``(all)`` line when it had several users."""
    lines: list[tuple[str, ...]] = [_HEADER]
    for (day, chat), group in groupby(rows, key=lambda r: (r.day, r.chat_key)):
        members = list(group)
        for row in members:
            who = f"{row.user_id} ({row.user_name})" if row.user_name else row.user_id
            if row.user_id == BOT_USER:
                who = f"the bot {row.user_name}".strip()
            lines.append(_line(day, chat, who, row.turns, row.usage))
        if len(members) > 1:
            total = Usage(
                sum(r.usage.prompt_tokens for r in members),
                sum(r.usage.completion_tokens for r in members),
                sum(r.usage.cached_tokens for r in members),
            )
            lines.append(_line(day, chat, "(all)", sum(r.turns for r in members), total))
    widths = [max(len(line[i]) for line in lines) for i in range(len(_HEADER))]
    out = []
    for line in lines:
        cells = [
            cell.ljust(width) if i < 3 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip() + "\n")
    return "".join(out)


def _line(day: str, chat: str, who: str, turns: int, usage: Usage) -> tuple[str, ...]:
    return (
        day,
        chat,
        who,
        str(turns),
        str(usage.prompt_tokens),
        str(usage.cached_tokens),
        str(usage.completion_tokens),
        str(usage.total_tokens),
    )


def cached_share(usage: Usage) -> float | None:
    """The fraction of input tokens a provider's cache served; None without input."""
    if usage.prompt_tokens <= 0:
        return None
    return usage.cached_tokens / usage.prompt_tokens


def percent(share: float) -> str:
    """``82 %``: rounded down, so a share short of all is never shown as 100 %."""
    return f"{int(share * 100)} %"
