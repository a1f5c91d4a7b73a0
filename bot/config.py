"""Configuration: ``config.yaml`` + environment, validated by pydantic.

Strings may use ``${VAR}`` (must be set) and ``${VAR:-default}``. Interpolation runs on the parsed
YAML tree, value by value, so an environment variable can never inject YAML structure. Secrets are
``SecretStr``: they print as ``**********`` and only :func:`secret_values` hands them to the log
redactor.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.context import Scope
from bot.errors import ConfigError

CONFIG_ENV_VAR = "PARLOUR_CONFIG"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _env_secret(name: str) -> SecretStr | None:
    value = os.environ.get(name)
    return SecretStr(value) if value else None


class RetrySettings(_Section):
    """The one retry layer around every LLM call (the SDK's own retries are off)."""

    max_attempts: int = Field(4, ge=1, le=10, description="for errors, timeouts, 5xx")
    max_rate_limited_attempts: int = Field(
        10,
        ge=1,
        le=50,
        description="for 429s: the server said when to come back (within max_total_wait)",
    )
    base_delay: float = Field(0.5, ge=0)
    max_delay: float = Field(8.0, ge=0)
    max_total_wait: float = Field(30.0, ge=0, description="cap on all sleeps of one call")


class EndpointSettings(_Section):
    """One OpenAI-compatible endpoint (the primary, or a fallback)."""

    base_url: str = Field(
        default_factory=lambda: os.environ.get("OPENAI_BASE_URL") or "", validate_default=True
    )
    api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip()
        if value and not re.match(r"^https?://", value):
            raise ValueError("must start with http:// or https://")
        if urlsplit(value).password is not None:
            raise ValueError("must not contain credentials; put the key in api_key")
        return value.rstrip("/")

    @property
    def effective_base_url(self) -> str:
        return self.base_url or OPENAI_DEFAULT_BASE_URL

    @property
    def needs_key(self) -> bool:
        """OpenAI itself needs a key; local servers (Ollama, vLLM, the test kit) usually don't."""
        return "api.openai.com" in self.effective_base_url


class LLMSettings(EndpointSettings):
    api_key: SecretStr | None = Field(default_factory=lambda: _env_secret("OPENAI_API_KEY"))
    context_window: int = Field(128_000, ge=256)
    max_output_tokens: int = Field(1024, ge=1)
    temperature: float | None = Field(0.7, ge=0, le=2)
    timeout: float = Field(60.0, gt=0, description="seconds for one HTTP attempt")
    deadline: float = Field(
        120.0,
        gt=0,
        description="seconds until the model must have started answering, all retries and "
        "fallbacks included; then the user is told",
    )
    circuit_breaker: float = Field(
        15.0,
        ge=0,
        description="after an endpoint failed for good (down, not busy), seconds it is skipped: "
        "fallbacks answer, or users are told at once (0: off)",
    )
    retry: RetrySettings = RetrySettings()
    fallbacks: tuple[EndpointSettings, ...] = ()

    @model_validator(mode="after")
    def _reserve_fits(self) -> LLMSettings:
        if self.max_output_tokens >= self.context_window:
            raise ValueError("max_output_tokens must be smaller than context_window")
        return self


class ChatSettings(_Section):
    system_prompt: str = (
        "You are Parlour, a helpful assistant in a group chat. Several people may talk to you; "
        "their messages start with their name in brackets. Answer concisely."
    )
    default_scope: Scope = Scope.CHAT
    max_input_chars: int = Field(16_000, ge=1, description="longer messages are refused")


class HistorySettings(_Section):
    max_tokens: int | None = Field(None, ge=1, description="cap on history tokens per request")
    max_turns: int = Field(50, ge=1, description="turns loaded from the store per request")
    retention_days: float | None = Field(
        None, gt=0, description="delete turns older than this (checked hourly); none: keep all"
    )
    context_messages: int = Field(
        20, ge=0, description="unaddressed group messages kept as context (0: none)"
    )
    context_max_age: float = Field(
        1800.0, gt=0, description="seconds an unaddressed message stays useful as context"
    )


class EmbeddingSettings(_Section):
    """Optional vectors for memory recall (``memory.embeddings``); off unless ``model`` is set.

    ``base_url`` defaults to ``llm.base_url``. ``api_key`` defaults to ``llm.api_key`` only
    while both talk to the same host: the chat provider's key is never sent to another server.
    """

    model: str | None = Field(None, description="embedding model; none: recall uses FTS only")
    base_url: str | None = Field(None, description="OpenAI-compatible server; default: llm's")
    api_key: SecretStr | None = None
    batch_size: int = Field(64, ge=1, le=2048, description="texts per /embeddings request")
    min_similarity: float = Field(
        0.3, ge=-1, le=1, description="cosine below which a memory is not recalled by meaning"
    )

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        return (value or "").strip() or None  # "${EMBEDDING_MODEL:-}" switches it off

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if not value or not value.strip():
            return None
        try:  # the same rules as every other endpoint's URL
            return EndpointSettings(base_url=value).base_url
        except ValidationError:
            raise ValueError(
                "must start with http:// or https:// and hold no credentials"
            ) from None


class LimitSettings(_Section):
    """Abuse and spending limits. Bot admins (``admins``) and the console are exempt from the
    per-user limits and the budgets; budgets count the tokens the provider reported."""

    messages_per_minute: float | None = Field(
        10, gt=0, description="per user per chat, on average (None: no limit)"
    )
    burst: int = Field(5, ge=1, description="messages a user may send at once before the rate")
    one_in_flight: bool = Field(
        True, description="refuse a user's new message while their last one is being answered"
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


class AccessSettings(_Section):
    """Who may use the bot (patterns: see ``bot.guardrails.access``)."""

    allow: tuple[str, ...] = Field((), description='e.g. ["telegram:-1001234", "*:private"]')
    deny: tuple[str, ...] = Field((), description='e.g. ["telegram:user:42"]; always wins')
    private_bot: bool = Field(False, description="only chats/users on the allow list")
    refusal: str = "Sorry, this bot is private and can't chat here."

    @field_validator("allow", "deny", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(str(v) for v in value)
        return value


class MemorySettings(_Section):
    enabled: bool = Field(True, description="recall stored memories and old messages")
    top_k: int = Field(5, ge=1, le=50, description="memories (and old messages) per request")
    max_tokens: int = Field(400, ge=0, description="cap on the recalled block in the prompt")
    recall_history: bool = Field(
        True, description="also search this conversation's messages older than the window"
    )
    share_private: bool = Field(
        False, description="recall a user's private-chat memories for them in groups too"
    )
    embeddings: EmbeddingSettings = EmbeddingSettings()
    summarize: bool = Field(
        False, description="summarise turns that left the window (an extra LLM call, background)"
    )
    summary_model: str | None = Field(None, description="model for summaries; default llm.model")
    summary_every: int = Field(10, ge=1, description="compact at most once per this many turns")
    summary_max_words: int = Field(200, ge=20, le=2000, description="length of the summary")
    extract_facts: bool = Field(True, description="store facts the summary names as memories")


class StorageSettings(_Section):
    path: Path = Path("data/parlour.db")
    jobs_path: Path | None = Field(
        None, description="scheduler's own SQLite file; default: <db name>.jobs.sqlite beside it"
    )

    @property
    def effective_jobs_path(self) -> Path:
        """One jobs file per history database: two bots in one folder never share jobs."""
        return self.jobs_path or self.path.with_name(f"{self.path.stem}.jobs.sqlite")


DEFAULT_PLUGINS = ("plugins.clock", "plugins.calculator", "plugins.reminders", "plugins.memory")


class PluginEntry(_Section):
    """One plugin: a module or entry-point name, its settings, and whether the bot needs it."""

    module: str
    settings: dict[str, Any] = Field(default_factory=dict)
    required: bool = False


class LoggingSettings(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


PLATFORM_TOKEN_ENV = {"telegram": "TELEGRAM_BOT_TOKEN", "discord": "DISCORD_BOT_TOKEN"}


class PlatformSettings(BaseModel):
    """Adapter sections are owned by their adapters; the core only reads ``enabled``."""

    model_config = ConfigDict(extra="allow", frozen=True)
    enabled: bool = False

    @model_validator(mode="before")
    @classmethod
    def _hide_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {
                k: SecretStr(v) if isinstance(v, str) and _looks_secret(str(k)) else v
                for k, v in data.items()
            }
        return data


class Settings(_Section):
    llm: LLMSettings = Field(default_factory=LLMSettings)
    chat: ChatSettings = ChatSettings()
    history: HistorySettings = HistorySettings()
    storage: StorageSettings = StorageSettings()
    memory: MemorySettings = MemorySettings()
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
        },
        description="adapter name -> module; the entry point imports them by name",
    )
    telegram: PlatformSettings = PlatformSettings()
    discord: PlatformSettings = PlatformSettings()
    plugins: tuple[PluginEntry, ...] = Field(
        tuple(PluginEntry(module=name) for name in DEFAULT_PLUGINS),
        description="replaces the default set; [] turns every plugin off",
    )
    plugins_required: bool = Field(False, description="refuse to start if any plugin fails")

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

    @field_validator("admins", mode="before")
    @classmethod
    def _admins(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(str(v) for v in value)
        return value

    def enabled_platforms(self) -> list[str]:
        return [name for name in ("telegram", "discord") if getattr(self, name).enabled]

    def is_bot_admin(self, platform: str, user_id: str) -> bool:
        return f"{platform}:{user_id}" in self.admins


def interpolate(value: Any, path: str = "") -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string of a parsed YAML tree."""
    if isinstance(value, dict):
        return {k: interpolate(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if default is not None:
            return found or default  # like the shell: unset or empty takes the default
        if found is None:
            raise ConfigError(f"{path}: environment variable {name} is not set")
        return found

    return _VAR.sub(substitute, value)


def describe_errors(
    error: ValidationError, prefix: tuple[str, ...] = (), *, top: str = "(top level)"
) -> list[str]:
    """One line per problem, naming the field and never echoing what was given there.

    A mistyped key is named, without its value (``unknown key telegram.tokn``): that value may
    be the secret meant for the right key. A message that quotes its input (a validator's
    ``unknown time zone '...'``) has the input masked.
    """
    lines = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in (*prefix, *item["loc"])) or top
        if item["type"] == "extra_forbidden":
            lines.append(f"unknown key {where}")
            continue
        message, given = item["msg"], item.get("input")
        for value in _scalars(given):
            if len(value) >= 3 and value in message:
                message = message.replace(value, "***")
        lines.append(f"{where}: {message}")
    return lines


def _scalars(value: Any) -> list[str]:
    """The strings an error's input holds, for masking them out of its message."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _scalars(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def _describe(error: ValidationError) -> str:
    return "invalid config: " + "; ".join(describe_errors(error))


def resolve_path(path: str | Path | None) -> Path | None:
    """``--config``, else ``$PARLOUR_CONFIG``, else ``./config.yaml`` if present."""
    if path is not None:
        return Path(path)
    if os.environ.get(CONFIG_ENV_VAR):
        return Path(os.environ[CONFIG_ENV_VAR])
    default = Path("config.yaml")
    return default if default.exists() else None


def load_settings(path: str | Path | None = None) -> Settings:
    """Load and validate the config; every failure is a :class:`ConfigError` naming the field."""
    resolved = resolve_path(path)
    raw: Any = {}
    if resolved is not None:
        try:
            raw = yaml.safe_load(resolved.read_text(encoding="utf-8")) or {}
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {resolved}") from exc
        except yaml.YAMLError as exc:
            # Only the position: the offending line itself may hold a secret.
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "syntax error"
            raise ConfigError(f"{resolved} is not valid YAML{where}: {problem}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {resolved}: {exc}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{resolved}: the top level must be a mapping of sections")
    return settings_from_mapping(raw)


def settings_from_mapping(raw: dict[str, Any]) -> Settings:
    try:
        return Settings.model_validate(interpolate(raw))
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


PlatformSection = TypeVar("PlatformSection", bound=BaseModel)


def platform_settings(
    settings: Settings, name: str, model: type[PlatformSection]
) -> PlatformSection:
    """Validate an adapter's own section (``telegram:``, ``discord:``) with its model.

    Errors name the field (``telegram.webhook.url: ...``) and never echo a value.
    """
    section: PlatformSettings = getattr(settings, name)
    try:
        return model.model_validate(section.model_dump())
    except ValidationError as exc:
        raise ConfigError("; ".join(describe_errors(exc, (name,)))) from None


def secret_values(settings: Settings) -> list[str]:
    """Every secret in the config, for the log redactor."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, SecretStr):
            if node.get_secret_value():
                found.append(node.get_secret_value())
        elif isinstance(node, BaseModel):
            for name in type(node).model_fields:
                walk(getattr(node, name))
            for extra in (node.model_extra or {}).values():
                walk(extra)
        elif isinstance(node, list | tuple):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, str) and _looks_secret(str(key)):
                    found.append(item)
                else:
                    walk(item)

    walk(settings)
    urls = [endpoint.base_url for endpoint in (settings.llm, *settings.llm.fallbacks)]
    if settings.memory.embeddings.base_url:
        urls.append(settings.memory.embeddings.base_url)
    for url in urls:  # gateways put keys in query strings
        found.extend(value for _, value in parse_qsl(urlsplit(url).query))
    return [s for s in found if s]


def safe_url(url: str) -> str:
    """A URL fit for logs: no credentials, no query string (gateways put keys there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _looks_secret(key: str) -> bool:
    return any(word in key.lower() for word in ("token", "key", "secret", "password"))


def masked_dump(settings: Settings) -> dict[str, Any]:
    """The effective config as plain data with every secret replaced by ``***``.

    The ``telegram:`` / ``discord:`` sections and plugin settings are as given, not validated:
    ``check-config`` prints their validated forms instead (``bot.config_report``).
    """
    masked: dict[str, Any] = mask_secrets(settings.model_dump(mode="json"))
    return masked


def mask_secrets(node: Any) -> Any:
    """Plain data with the value of every secret-looking key (token, key, ...) as ``***``."""
    if isinstance(node, dict):
        return {
            k: ("***" if v and _looks_secret(str(k)) and isinstance(v, str) else mask_secrets(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [mask_secrets(v) for v in node]
    return node
