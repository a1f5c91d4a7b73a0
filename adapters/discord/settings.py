"""The ``discord:`` config section, owned by this adapter and validated when it starts."""

from __future__ import annotations

import re
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from bot.config import FixableValueError, Settings, platform_settings

DEFAULT_API_BASE = "https://discord.com/api/v10"
DEFAULT_GATEWAY_URL = "wss://gateway.discord.gg"
_BOT_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


class DiscordBot(BaseModel):
    """One more bot application run beside ``discord.token`` by the same deployment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        description="short id (a-z, 0-9, _): its chats are discord.NAME:<channel id>, which"
        " chats: presets match to give it its own persona, model, plugins and knowledge"
    )
    token: SecretStr = Field(description="its bot token (Developer Portal -> its application)")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not _BOT_NAME.match(self.name):
            raise ValueError("name: 1-32 of a-z, 0-9 and _")
        if not self.token.get_secret_value().strip():
            raise ValueError("token is empty")
        return self

    @property
    def platform(self) -> str:
        return f"discord.{self.name}"


class DiscordSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="run the Discord adapter")
    token: SecretStr | None = Field(None, description="bot token; env DISCORD_BOT_TOKEN")
    api_base: str = Field(DEFAULT_API_BASE, description="REST base URL (proxies, tests)")
    gateway_url: str = Field(DEFAULT_GATEWAY_URL, description="gateway websocket URL")
    guild_ids: tuple[int, ...] = Field(
        (), description="sync slash commands to these servers (instant); empty: globally"
    )
    mention_trigger: bool = Field(True, description="answer @mentions and replies to the bot")
    keep_context: bool = Field(
        True, description="keep unaddressed messages as context (needs the message content intent)"
    )
    stream: bool = Field(True, description="stream replies by editing the message")
    edit_interval: float = Field(1.0, gt=0, description="seconds between edits in one channel")
    shard_count: int | None = Field(
        None,
        ge=1,
        description="gateway shards over all processes; unset: what GET /gateway/bot recommends",
    )
    shard_ids: tuple[int, ...] | None = Field(
        None,
        description=(
            "the shards this process runs, each in [0, shard_count); unset: all of them;"
            " the process running shard 0 syncs slash commands"
        ),
    )
    bots: tuple[DiscordBot, ...] = Field(
        (),
        description="more bot applications run beside token, each with its own chats, history"
        " and usage (the settings above apply to each); in a channel they share, each sees the"
        " others' answers",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.enabled and self.token is None:
            raise FixableValueError("token is missing", "set DISCORD_BOT_TOKEN or discord.token")
        if not self.api_base.startswith(("https://", "http://")):
            raise ValueError("api_base must be an http(s) URL")
        if not self.gateway_url.startswith(("wss://", "ws://")):
            raise ValueError("gateway_url must be a ws(s) URL")
        self._check_shards()
        if self.enabled:
            self._check_bots()
        return self

    def _check_bots(self) -> None:
        """Each bot its own name and token (a token is never echoed: only where it repeats)."""
        seen: set[str] = set()
        for n, bot in enumerate(self.bots):
            if bot.name in seen:
                raise ValueError(f"bots[{n}].name: {bot.name!r} is used twice; each needs its own")
            seen.add(bot.name)
        tokens = [self.bot_token, *(bot.token.get_secret_value() for bot in self.bots)]
        for n, token in enumerate(tokens[1:], start=1):
            if token in tokens[:n]:
                first = tokens.index(token)
                where = "discord.token" if first == 0 else f"bots[{first - 1}].token"
                raise ValueError(
                    f"bots[{n - 1}].token is the same as {where}; each bot needs its own token"
                )

    def _check_shards(self) -> None:
        if self.shard_ids is None:
            return
        if self.shard_count is None:
            raise ValueError("shard_ids needs shard_count (the total number of shards)")
        if not self.shard_ids:
            raise ValueError("shard_ids is empty: list this process's shards, or leave it unset")
        wrong = [i for i in self.shard_ids if not 0 <= i < self.shard_count]
        if wrong:
            raise ValueError(
                f"shard_ids {wrong} out of range: shard ids go from 0 to shard_count - 1"
                f" ({self.shard_count - 1})"
            )
        if len(set(self.shard_ids)) != len(self.shard_ids):
            raise ValueError("shard_ids lists a shard twice")

    @property
    def runs_shard_zero(self) -> bool:
        """The process running shard 0 syncs slash commands: exactly one does, no lock needed."""
        return self.shard_ids is None or 0 in self.shard_ids

    def for_bot(self, bot: DiscordBot) -> DiscordSettings:
        """These settings for one of ``bots``: its token, everything else shared."""
        return self.model_copy(update={"token": bot.token, "bots": ()})

    @property
    def bot_token(self) -> str:
        assert self.token is not None, "validated when enabled"
        return self.token.get_secret_value()

    @property
    def wants_message_content(self) -> bool:
        """The privileged intent is only asked for when a feature reads ordinary messages."""
        return self.mention_trigger or self.keep_context


def discord_settings(settings: Settings) -> DiscordSettings:
    return platform_settings(settings, "discord", DiscordSettings)
