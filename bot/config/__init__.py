"""Configuration: ``config.yaml`` + environment, validated by pydantic.

Strings may use ``${VAR}`` (must be set) and ``${VAR:-default}``; the CLI loads with
``defer_unset``, so only a command that reads an unset variable's section fails on it.
Interpolation runs on the parsed YAML tree, value by value, so an environment variable can never
inject YAML structure. Secrets are ``SecretStr``: they print as ``**********`` and only
:func:`secret_values` hands them to the log redactor.

One module per part: ``llm`` (endpoints, retry), ``conversation`` (chat, history, storage,
logging), ``memory``, ``guardrails`` (limits, access), ``chats`` (per-chat presets),
``settings`` (the whole tree, plugins, platform sections), ``loading`` (YAML, interpolation,
errors), ``masking`` (secrets) and ``reference`` (writes ``docs/configuration-reference.md``
from the field descriptions).
"""

from __future__ import annotations

from bot.config.base import FixableValueError, UnsetVariable
from bot.config.chats import ChatPreset
from bot.config.conversation import ChatSettings, HistorySettings, LoggingSettings, StorageSettings
from bot.config.guardrails import AccessSettings, LimitSettings
from bot.config.llm import (
    OPENAI_DEFAULT_BASE_URL,
    EndpointSettings,
    FallbackSettings,
    LLMSettings,
    RetrySettings,
)
from bot.config.loading import (
    CONFIG_ENV_VAR,
    describe_errors,
    error_fixes,
    interpolate,
    load_settings,
    platform_settings,
    resolve_path,
    settings_from_mapping,
)
from bot.config.masking import mask_secrets, masked_dump, safe_url, secret_values
from bot.config.mcp import MCPServerSettings, MCPSettings
from bot.config.memory import EmbeddingSettings, MemorySettings
from bot.config.settings import (
    CLIENT_NAMED_PLATFORMS,
    DEFAULT_PLUGINS,
    PLATFORM_SECTIONS,
    PLATFORM_TOKEN_ENV,
    PlatformSettings,
    PluginEntry,
    Settings,
)
from bot.config.tools import ToolsSettings
from bot.errors import ConfigError

__all__ = [
    "CLIENT_NAMED_PLATFORMS",
    "CONFIG_ENV_VAR",
    "DEFAULT_PLUGINS",
    "OPENAI_DEFAULT_BASE_URL",
    "PLATFORM_SECTIONS",
    "PLATFORM_TOKEN_ENV",
    "AccessSettings",
    "ChatPreset",
    "ChatSettings",
    "ConfigError",
    "EmbeddingSettings",
    "EndpointSettings",
    "FallbackSettings",
    "FixableValueError",
    "HistorySettings",
    "LLMSettings",
    "LimitSettings",
    "LoggingSettings",
    "MCPServerSettings",
    "MCPSettings",
    "MemorySettings",
    "PlatformSettings",
    "PluginEntry",
    "RetrySettings",
    "Settings",
    "StorageSettings",
    "ToolsSettings",
    "UnsetVariable",
    "describe_errors",
    "error_fixes",
    "interpolate",
    "load_settings",
    "mask_secrets",
    "masked_dump",
    "platform_settings",
    "resolve_path",
    "safe_url",
    "secret_values",
    "settings_from_mapping",
]
