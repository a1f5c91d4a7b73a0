"""``chat:``, ``history:``, ``storage:`` and ``logging:``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from bot.config.base import Section
from bot.config.storage_url import StorageURL, parse_storage_url, sqlite_url
from bot.context import Scope
from bot.errors import ConfigError


class ChatSettings(Section):
    system_prompt: str = Field(
        "You are Parlour, a helpful assistant in a group chat. Several people may talk to you; "
        "their messages start with their name in brackets. Answer concisely.",
        description="the system prompt; a chat's own override is stored with the chat",
    )
    default_scope: Scope = Field(
        Scope.CHAT,
        description="chat: one history per group; user: one per person; thread: one per "
        "topic or thread (private chats are always per user)",
    )
    max_input_chars: int = Field(16_000, ge=1, description="longer messages are refused")
    max_persona_chars: int = Field(
        4000, ge=1, description="longest system prompt /persona accepts (it is in every prompt)"
    )
    burst_window: float = Field(
        2.0,
        ge=0,
        le=30,
        description="seconds: messages one person sends within this of each other, before"
        " the model is called, are answered as one turn (each still stored as itself); an"
        " answer waits this long after the last of them (0: off, each message on its own)",
    )
    burst_max_messages: int = Field(
        10, ge=1, description="most messages one burst folds into a turn"
    )
    reset: Literal["admins", "anyone"] = Field(
        "admins",
        description="who may /reset a shared conversation (a group in chat or thread scope);"
        " in user scope and private chats each person resets their own",
    )


class HistorySettings(Section):
    max_tokens: int | None = Field(None, ge=1, description="cap on history tokens per request")
    max_turns: int = Field(50, ge=1, description="most turns of history in a request")
    low_water: float = Field(
        0.65,
        gt=0,
        lt=1,
        description=(
            "when history would pass its budget (max_tokens, the context window, max_turns),"
            " cut it to this share of it in one step; between cuts every request starts with"
            " the previous one, which provider prompt caches bill at a fraction"
        ),
    )
    retention_days: float | None = Field(
        None, gt=0, description="delete turns older than this (checked hourly); none: keep all"
    )
    context_messages: int = Field(
        20, ge=0, description="unaddressed group messages kept as context (0: none)"
    )
    context_max_age: float = Field(
        1800.0, gt=0, description="seconds an unaddressed message stays useful as context"
    )


class StorageSettings(Section):
    url: str | None = Field(
        None,
        description=(
            "the database: sqlite:///data/parlour.db or postgresql://user:pass@host:5432/db"
            " (add ?schema=NAME to keep to one schema); default: the SQLite file at storage.path"
        ),
    )
    path: Path = Field(
        Path("data/parlour.db"), description="the SQLite history file (WAL), created on first run"
    )
    jobs_path: Path | None = Field(
        None, description="scheduler's own SQLite file; default: <db name>.jobs.sqlite beside it"
    )
    scheduler_lease_seconds: float = Field(
        15.0,
        ge=3,
        le=600,
        description=(
            "PostgreSQL: how long the scheduler leader's lease lasts; another replica takes over"
            " this long after the leader dies (renewed every fifth of it)"
        ),
    )

    @field_validator("url")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            parse_storage_url(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value.strip()

    @property
    def effective_url(self) -> StorageURL:
        """``storage.url`` parsed, or the SQLite file at ``storage.path``."""
        return parse_storage_url(self.url or sqlite_url(self.path))

    @property
    def effective_jobs_path(self) -> Path:
        """One jobs file per history database: two bots in one folder never share jobs. The
        database is ``storage.url``'s SQLite file when set (``storage copy`` finds it the same
        way), else ``storage.path``. Unused on PostgreSQL: jobs live in that database."""
        url = self.effective_url
        database = url.path if url.path is not None else self.path
        return self.jobs_path or database.with_name(f"{database.stem}.jobs.sqlite")


class LoggingSettings(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="log level of the bot's own loggers"
    )
