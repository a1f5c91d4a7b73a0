"""The whole config: every section, the plugin list and the platform sections' envelope."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)

from bot.config.ambient import AmbientSettings
from bot.config.base import Section, UnsetVariable, looks_secret
from bot.config.catchup import CatchupSettings
from bot.config.chats import ChatPreset, unknown_bases, unknown_plugins, unknown_servers
from bot.config.conversation import ChatSettings, HistorySettings, LoggingSettings, StorageSettings
from bot.config.guardrails import AccessSettings, LimitSettings
from bot.config.knowledge import KnowledgeSettings
from bot.config.llm import LLMSettings
from bot.config.mcp import MCPSettings
from bot.config.memory import MemorySettings
from bot.config.schedules import ScheduleSettings
from bot.config.tools import ToolsSettings
from bot.context import platform_family
from bot.errors import ConfigError

DEFAULT_PLUGINS = ("plugins.clock", "plugins.calculator", "plugins.reminders", "plugins.memory")


class PluginEntry(Section):
    """One plugin: a module or entry-point name, its settings, and whether the bot needs it."""

    module: str = Field(description="a module path or a `parlour.plugins` entry-point name")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="validated against the plugin's Settings model"
    )
    required: bool = Field(False, description="refuse to start if this plugin fails to load")


def _hidden(value: Any) -> Any:
    """A secret key's value as SecretStr, also inside a mapping (``admin_tokens: {ops: ...}``)."""
    if isinstance(value, str):
        return SecretStr(value)
    if isinstance(value, dict):
        return {k: _hidden(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_hidden(v) for v in value]
    return value


PLATFORM_SECTIONS = ("telegram", "discord", "http")
PLATFORM_TOKEN_ENV = {"telegram": "TELEGRAM_BOT_TOKEN", "discord": "DISCORD_BOT_TOKEN"}
CLIENT_NAMED_PLATFORMS = frozenset({"http"})
"""Platforms whose user ids the client names itself (the HTTP API's ``user`` field): no
``admins:`` entry can be verified there, so none is accepted (an HTTP token is made a bot
admin by ``http.bot_admin_tokens`` instead)."""


class PlatformSettings(BaseModel):
    """Adapter sections are owned by their adapters; the core only reads ``enabled``."""

    model_config = ConfigDict(extra="allow", frozen=True)
    enabled: bool = False

    @model_validator(mode="before")
    @classmethod
    def _hide_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: _hidden(v) if looks_secret(str(k)) else v for k, v in data.items()}
        return data


class Settings(Section):
    llm: LLMSettings = Field(default_factory=LLMSettings)
    chat: ChatSettings = ChatSettings()
    history: HistorySettings = HistorySettings()
    storage: StorageSettings = StorageSettings()
    memory: MemorySettings = MemorySettings()
    knowledge: KnowledgeSettings = Field(default_factory=KnowledgeSettings)
    tools: ToolsSettings = ToolsSettings()
    ambient: AmbientSettings = AmbientSettings()
    schedules: ScheduleSettings = ScheduleSettings()
    catchup: CatchupSettings = CatchupSettings()
    mcp: MCPSettings = MCPSettings()
    access: AccessSettings = AccessSettings()
    limits: LimitSettings = LimitSettings()
    logging: LoggingSettings = LoggingSettings()
    admins: tuple[str, ...] = Field(
        (), description='bot admins as "platform:user_id", e.g. "telegram:12345"'
    )
    adapters: dict[str, str] = Field(
        default_factory=lambda: {
            "console": "adapters.console",
            "telegram": "adapters.telegram",
            "discord": "adapters.discord",
            "http": "adapters.http",
        },
        description="adapter name -> module; the entry point imports them by name",
    )
    telegram: PlatformSettings = PlatformSettings()
    discord: PlatformSettings = PlatformSettings()
    http: PlatformSettings = PlatformSettings()
    plugins: tuple[PluginEntry, ...] = Field(
        tuple(PluginEntry(module=name) for name in DEFAULT_PLUGINS),
        description="replaces the default set; [] turns every plugin off",
    )
    plugins_required: bool = Field(False, description="refuse to start if any plugin fails")
    chats: tuple[ChatPreset, ...] = Field(
        (),
        description="presets for chosen chats (system_prompt, model, scope, plugins);"
        " the first entry whose match fits a chat applies",
    )
    _unset: tuple[UnsetVariable, ...] = PrivateAttr(default=())

    @field_validator("plugins", mode="before")
    @classmethod
    def _plugin_entries(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, list | tuple):
            return tuple({"module": v} if isinstance(v, str) else v for v in value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _platform_tokens(cls, data: Any) -> Any:
        """Bot tokens come from the environment unless the config names one."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, variable in PLATFORM_TOKEN_ENV.items():
            section = data.get(name) or {}
            token = os.environ.get(variable)
            if isinstance(section, dict) and token and not section.get("token"):
                data[name] = {**section, "token": token}
        return data

    @model_validator(mode="after")
    def _preset_plugins_loaded(self) -> Settings:
        problems = unknown_plugins(self.chats, {entry.module for entry in self.plugins})
        problems += unknown_servers(self.chats, set(self.mcp.servers))
        problems += unknown_bases(self.chats, set(self.knowledge.bases))
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @field_validator("admins", mode="before")
    @classmethod
    def _admins(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(str(v) for v in value)
        return value

    @field_validator("admins")
    @classmethod
    def _verifiable_admins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        claimed = [v for v in value if v.partition(":")[0] in CLIENT_NAMED_PLATFORMS]
        if claimed:
            raise ValueError(
                "an http: entry cannot be verified: an HTTP client names its own user, so"
                " anyone could claim it. Make a token's callers bot admins with"
                " http.bot_admin_tokens: [<token name>] instead"
            )
        return value

    def enabled_platforms(self) -> list[str]:
        return [name for name in PLATFORM_SECTIONS if getattr(self, name).enabled]

    def record_unset(self, unset: Iterable[UnsetVariable]) -> None:
        """Note the ``${VAR}`` values left out when loading (``load_settings(defer_unset=)``)."""
        self._unset = tuple(unset)

    def unset_variables(self, *sections: str) -> list[UnsetVariable]:
        """The ``${VAR}`` left unset under ``sections`` (top-level keys; all when none given)."""
        return [u for u in self._unset if not sections or u.section in sections]

    def require_variables(self, *sections: str) -> None:
        """A :class:`ConfigError` naming every variable ``sections`` need and do not have."""
        _require(self.unset_variables(*sections))

    def unset_serving(self, platforms: Iterable[str]) -> list[UnsetVariable]:
        """The unset variables serving ``platforms`` would read: all but those in the other
        platforms' sections (a platform whose ``enabled`` is itself unset may be meant on, and
        a key that is no section at all is not known to be unread)."""
        served = set(platforms) | {
            u.section for u in self._unset if u.path == f"{u.section}.enabled"
        }
        return [u for u in self._unset if u.section not in PLATFORM_SECTIONS or u.section in served]

    def require_serving(self, platforms: Iterable[str]) -> None:
        """A :class:`ConfigError` naming every variable serving ``platforms`` needs."""
        _require(self.unset_serving(platforms))

    def is_bot_admin(self, platform: str, user_id: str) -> bool:
        if platform in CLIENT_NAMED_PLATFORMS:
            return False  # never by a name the client chose (see CLIENT_NAMED_PLATFORMS)
        family = platform_family(platform)  # telegram.helper: a Telegram user is one person
        return f"{platform}:{user_id}" in self.admins or f"{family}:{user_id}" in self.admins


def _require(missing: list[UnsetVariable]) -> None:
    if missing:
        raise ConfigError("; ".join(str(u) for u in missing))
