"""``limits:`` and ``access:``: who may use the bot, how much and how fast."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from bot.config.base import Section


class LimitSettings(Section):
    """Abuse and spending limits. Bot admins (``admins``) and the console are exempt from the
    per-user limits and the budgets; budgets count the tokens the provider reported."""

    messages_per_minute: float | None = Field(
        10, gt=0, description="per user per chat, on average (None: no limit)"
    )
    burst: int = Field(5, ge=1, description="messages a user may send at once before the rate")
    one_in_flight: bool = Field(
        True,
        description="one answer at a time per user per conversation: messages sent meanwhile"
        " wait for it (at most max_queued), and are answered next",
    )
    max_queued: int = Field(
        3,
        ge=0,
        description="messages a user may have waiting behind the answer being written, per"
        " conversation (with one_in_flight); more are refused, said once",
    )
    max_output_tokens: int | None = Field(
        None, ge=1, description="cap on tokens the model may write per request (<= llm's)"
    )
    max_reply_chars: int = Field(
        12_000,
        ge=500,
        description="characters one answer may show, however much the model writes; a longer "
        "one is cut with a note (a server may ignore max_tokens)",
    )
    max_reply_messages: int = Field(
        5, ge=1, description="chat messages one answer may take, streamed previews included"
    )

    daily_tokens_per_user: int | None = Field(
        200_000, ge=1, description="per user, every chat together, per UTC day (None: no budget)"
    )
    daily_tokens_per_chat: int | None = Field(
        1_000_000, ge=1, description="per chat, everyone together, per UTC day (None: no budget)"
    )
    daily_tokens_total: int | None = Field(
        5_000_000, ge=1, description="the whole bot per UTC day: the bill's ceiling (None: none)"
    )
    max_input_chars: int | None = Field(
        None, ge=1, description="longer messages are refused (default: chat.max_input_chars)"
    )
    max_concurrent_llm_calls: int | None = Field(
        None, ge=1, description="model requests in flight at once; the rest queue"
    )
    queue_timeout: float = Field(
        30.0, gt=0, description="seconds a queued message waits before a 'busy' reply"
    )


class AccessSettings(Section):
    """Who may use the bot (patterns: see ``bot.guardrails.access``)."""

    allow: tuple[str, ...] = Field((), description='e.g. ["telegram:-1001234", "*:private"]')
    deny: tuple[str, ...] = Field((), description='e.g. ["telegram:user:42"]; always wins')
    private_bot: bool = Field(False, description="only chats/users on the allow list")
    refusal: str = Field(
        "Sorry, this bot is private and can't chat here.",
        description="said to a refused chat, once a day per chat",
    )

    @field_validator("allow", "deny", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(str(v) for v in value)
        return value
