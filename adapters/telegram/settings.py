"""The ``telegram:`` config section, owned by this adapter and validated when it starts.

The core only reads ``telegram.enabled``; everything else is checked here so a typo names the
field (``telegram.webhook.url: ...``) instead of surfacing as a failed request later.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from bot.config import FixableValueError, Settings, platform_settings

DEFAULT_API_SERVER = "https://api.telegram.org"
_TOKEN = re.compile(r"^\d+:[\w-]+$")
_BOT_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GroupTrigger(_Section):
    """When the bot answers in a group (private chats always answer)."""

    mention: bool = Field(True, description="answer an @mention of the bot")
    reply: bool = Field(True, description="answer a reply to one of the bot's messages")
    ask_command: bool = Field(True, description="answer /ask <text>")
    keywords: tuple[str, ...] = Field((), description="answer messages containing any of these")
    keep_context: bool = Field(
        True, description="keep unaddressed messages as context (bounded by history.context_*)"
    )


class WebhookSettings(_Section):
    url: str | None = Field(
        None,
        description="public HTTPS URL Telegram posts updates to (with replicas: the load "
        "balancer's, the same on every replica)",
    )
    secret_token: SecretStr | None = Field(
        None,
        description="X-Telegram-Bot-Api-Secret-Token; when unset, one derived from the bot "
        "token (the same on every replica)",
    )
    listen_host: str = Field("0.0.0.0", description="address the webhook server binds")
    listen_port: int = Field(8080, ge=0, le=65535, description="port the webhook server binds")
    path: str = Field("/telegram/webhook", description="URL path the webhook server answers")
    drop_pending_updates: bool = Field(
        False, description="webhook mode: drop updates Telegram queued while the bot was away"
    )
    lease_seconds: float = Field(
        10.0,
        ge=1.0,
        le=600.0,
        description="how long a replica's claim on an update lasts unrenewed (renewed every "
        "third of it while it runs): a dead replica's updates move to another within this",
    )
    max_connections: int = Field(
        100,
        ge=1,
        le=100,
        description="setWebhook's max_connections: updates Telegram posts at once (its own "
        "default is 40); each post only stores its update, so a burst comes in faster",
    )
    max_running: int = Field(
        256,
        ge=1,
        le=100_000,
        description="updates one replica runs at once (each in a different chat); the rest "
        "wait in the inbox for it or another replica",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.url is not None and not self.url.startswith(("https://", "http://")):
            raise ValueError("url must be an http(s) URL")
        if self.secret_token is not None and not re.fullmatch(
            r"[A-Za-z0-9_-]{1,256}", self.secret_token.get_secret_value()
        ):
            raise ValueError("secret_token may only use A-Z, a-z, 0-9, _ and - (1-256 chars)")
        if not self.path.startswith("/"):
            raise ValueError("path must start with /")
        return self


class TelegramBot(_Section):
    """One more bot account run beside ``telegram.token`` by the same deployment."""

    name: str = Field(
        description="short id (a-z, 0-9, _): its chats are telegram.NAME:<chat id>, which"
        " chats: presets match to give it its own persona, model, plugins and knowledge"
    )
    token: SecretStr = Field(description="its BotFather token")
    api_server: str | None = Field(
        None, description="its Bot API server, if not telegram.api_server (a local one)"
    )
    webhook: WebhookSettings | None = Field(
        None,
        description="webhook mode: its own webhook (url, and a listen_port or path of its"
        " own); the rest of telegram.webhook's settings are not inherited",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not _BOT_NAME.match(self.name):
            raise ValueError("name: 1-32 of a-z, 0-9 and _")
        if self.api_server is not None and not self.api_server.startswith(("https://", "http://")):
            raise ValueError("api_server must be an http(s) URL")
        if not _TOKEN.match(self.token.get_secret_value()):
            raise ValueError("token does not look like a bot token (123456:ABC-...)")
        return self

    @property
    def platform(self) -> str:
        return f"telegram.{self.name}"


class TelegramSettings(_Section):
    enabled: bool = Field(False, description="run the Telegram adapter")
    token: SecretStr | None = Field(None, description="from BotFather; env TELEGRAM_BOT_TOKEN")
    api_server: str = Field(DEFAULT_API_SERVER, description="Bot API server base URL")
    mode: Literal["polling", "webhook"] = Field(
        "polling", description="polling needs no public address; webhook needs webhook.url"
    )
    webhook: WebhookSettings = WebhookSettings()
    group_trigger: GroupTrigger = GroupTrigger()
    chats: dict[str, GroupTrigger] = Field(
        default_factory=dict,
        description="per-chat overrides of group_trigger (the same keys), keyed by chat id",
    )
    stream: bool = Field(True, description="stream replies by editing one message")
    edit_interval_private: float = Field(1.0, gt=0, description="seconds between edits")
    edit_interval_group: float = Field(3.0, gt=0, description="seconds between edits in groups")
    admin_cache_seconds: float = Field(60.0, ge=0, description="how long getChatMember is trusted")
    flood_retries: int = Field(3, ge=0, description="resends after a 429 (flood control)")
    flood_max_wait: float = Field(60.0, gt=0, description="longest retry_after worth waiting")
    delivery_deadline: float = Field(
        60.0,
        gt=0,
        description="seconds a Bot API call, and a reply's final delivery, may spend on resends "
        "(429s, 5xx, network errors) before the reply is stored as undelivered",
    )
    polling_timeout: int = Field(30, ge=1, le=50, description="getUpdates long-poll seconds")
    poller_lease_seconds: float = Field(
        15.0,
        ge=3.0,
        le=600.0,
        description="polling mode: how long the one poller's lease on this bot token lasts "
        "unrenewed; a second poller is refused while it is held",
    )
    bots: tuple[TelegramBot, ...] = Field(
        (),
        description="more bot accounts run beside token (polling mode), each with its own"
        " chats, history and usage; in a group they share, each sees the others' answers",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.enabled:
            if self.token is None:
                raise FixableValueError(
                    "token is missing", "set TELEGRAM_BOT_TOKEN or telegram.token"
                )
            if not _TOKEN.match(self.token.get_secret_value()):
                raise ValueError("token does not look like a bot token (123456:ABC-...)")
            if self.mode == "webhook" and self.webhook.url is None:
                raise ValueError("mode is webhook but webhook.url is not set")
            if self.bots and self.mode == "webhook":
                self._check_webhooks()
            self._check_unique()
        if not self.api_server.startswith(("https://", "http://")):
            raise ValueError("api_server must be an http(s) URL")
        return self

    def trigger_for(self, chat_id: int | str) -> GroupTrigger:
        return self.chats.get(str(chat_id), self.group_trigger)

    def webhook_secret(self) -> str:
        """The configured secret, else one derived from the token (same on every replica)."""
        if self.webhook.secret_token is not None:
            return self.webhook.secret_token.get_secret_value()
        key = self.bot_token.encode()
        return hmac.new(key, b"parlour telegram webhook", hashlib.sha256).hexdigest()

    def _check_unique(self) -> None:
        """Each bot its own name and token; the error names the entries, never the values."""
        names: dict[str, int] = {}
        tokens = {self.bot_token: "telegram.token"}
        for index, bot in enumerate(self.bots):
            if bot.name in names:
                raise ValueError(f"bots[{index}].name is the same as bots[{names[bot.name]}]'s")
            names[bot.name] = index
            token = bot.token.get_secret_value()
            if token in tokens:
                raise ValueError(f"bots[{index}].token is the same as {tokens[token]}")
            tokens[token] = f"bots[{index}].token"

    def _check_webhooks(self) -> None:
        """Webhook mode with several bots: each its own URL, and listener (a port, or a path
        on the same port: each bot listens on its own port, so the ports must differ)."""
        hooks = [self.webhook]
        for index, bot in enumerate(self.bots):
            if bot.webhook is None or bot.webhook.url is None:
                raise FixableValueError(
                    f"bots[{index}].webhook.url is not set (webhook mode)",
                    "give each bot its own webhook: url and listen_port",
                )
            hooks.append(bot.webhook)
        urls = [hook.url for hook in hooks]
        ports = [(hook.listen_host, hook.listen_port) for hook in hooks if hook.listen_port]
        if len(set(urls)) < len(urls) or len(set(ports)) < len(ports):
            raise ValueError("bots: each webhook needs a url and a listen_port of its own")

    def for_bot(self, bot: TelegramBot) -> TelegramSettings:
        """These settings for one of ``bots``: its token (and server, webhook), the rest
        shared."""
        update: dict[str, object] = {
            "token": bot.token,
            "api_server": bot.api_server or self.api_server,
            "bots": (),
        }
        if bot.webhook is not None:
            update["webhook"] = bot.webhook
        return self.model_copy(update=update)

    @property
    def bot_token(self) -> str:
        assert self.token is not None, "validated when enabled"
        return self.token.get_secret_value()


def telegram_settings(settings: Settings) -> TelegramSettings:
    """Validate the generic ``telegram:`` section; errors name the field, never the token."""
    return platform_settings(settings, "telegram", TelegramSettings)
