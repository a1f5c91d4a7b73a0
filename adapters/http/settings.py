"""The ``http:`` config section: the HTTP API and the admin dashboard, owned by this adapter.

Tokens are secrets from the environment (``${PARLOUR_ADMIN_TOKEN}``); each has a name, which
the audit trail records for what it did ("cleared by http:ops"). A list of tokens is named
``token-1``, ``token-2``... in order.

A chat token reaches only its own conversations: the token's *namespace* (its name, unless
``namespaces`` names a shared one) is part of every conversation key it makes
(:mod:`adapters.http.identity`). Whether a chat caller is a bot admin is a property of its
token (``bot_admin_tokens``), never of the ``user`` a client names.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from bot.config import Settings, platform_settings

_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,32}$")
MIN_TOKEN_CHARS = 16
RESERVED_NAME = "http"  # a token actor is "http:<name>"; a namespace "http" would blur it


class HTTPSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="serve the HTTP API and the dashboard")
    listen_host: str = Field(
        "127.0.0.1", description="address to bind (0.0.0.0: every interface; put TLS in front)"
    )
    listen_port: int = Field(8090, ge=0, le=65535, description="port to bind (0: any free one)")
    admin_tokens: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="name -> token for the admin API and the dashboard (from the environment)",
    )
    chat_tokens: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="name -> token for POST /v1/chat/completions (an admin token works too)",
    )
    secure_cookies: bool = Field(
        False, description="mark the dashboard cookie Secure (set it when served over HTTPS)"
    )
    session_hours: float = Field(
        12, gt=0, le=24 * 30, description="how long a dashboard login lasts"
    )
    failed_logins_per_minute: int = Field(
        10, ge=1, le=10_000, description="wrong tokens one address may send per minute"
    )
    max_body_bytes: int = Field(
        1_048_576, ge=1024, le=64 * 1_048_576, description="largest request body accepted"
    )
    bot_admin_tokens: tuple[str, ...] = Field(
        (),
        description="names of tokens whose chat callers are bot admins (admin-only tools,"
        " no access list or limits); the only way to be a bot admin over HTTP",
    )
    namespaces: dict[str, str] = Field(
        default_factory=dict,
        description="token name -> conversation namespace, for tokens that must share"
        " conversations (default: each token its own, named after it)",
    )
    legacy_namespace: str | None = Field(
        None,
        description="the namespace that keeps the conversations stored before tokens were"
        " part of the key (keys http:<user>); unset: no token reaches them",
    )

    @field_validator("admin_tokens", "chat_tokens", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return {f"token-{i + 1}": token for i, token in enumerate(value)}
        return value

    @field_validator("bot_admin_tokens", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        """Token *names* (the core hides values under a token-like key: unwrap them)."""
        if isinstance(value, list | tuple):
            return tuple(v.get_secret_value() if isinstance(v, SecretStr) else v for v in value)
        return value

    @field_validator("admin_tokens", "chat_tokens")
    @classmethod
    def _strong(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, token in value.items():
            if not _NAME.match(name):
                raise ValueError("token names use 1-32 of a-z, A-Z, 0-9, _ . -")
            if len(token.get_secret_value()) < MIN_TOKEN_CHARS:
                raise ValueError(
                    f"token {name!r} is shorter than {MIN_TOKEN_CHARS} characters"
                    " (make one: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
                )
        return value

    @model_validator(mode="after")
    def _distinct(self) -> HTTPSettings:
        values = [
            t.get_secret_value() for t in (*self.admin_tokens.values(), *self.chat_tokens.values())
        ]
        if len(values) != len(set(values)):
            raise ValueError(
                "every token must be different (an admin token already works for chat)"
            )
        if self.enabled and not self.admin_tokens and not self.chat_tokens:
            raise ValueError("give admin_tokens or chat_tokens: every route but /healthz needs one")
        return self

    @model_validator(mode="after")
    def _names_known(self) -> HTTPSettings:
        """Every name the identity keys refer to is a configured token or a valid namespace."""
        tokens = {*self.admin_tokens, *self.chat_tokens}
        if RESERVED_NAME in tokens or RESERVED_NAME in self.namespaces.values():
            raise ValueError(
                f"{RESERVED_NAME!r} is reserved (the audit trail names tokens http:<name>)"
            )
        for field, names in (
            ("bot_admin_tokens", list(self.bot_admin_tokens)),
            ("namespaces", list(self.namespaces)),
        ):
            unknown = sorted(set(names) - tokens)
            if unknown:
                raise ValueError(f"{field} names tokens that are not configured: {unknown}")
        for namespace in (*self.namespaces.values(), self.legacy_namespace):
            if namespace is not None and not _NAME.match(namespace):
                raise ValueError("namespaces use 1-32 of a-z, A-Z, 0-9, _ . -")
        return self

    def namespace(self, token_name: str) -> str:
        """The conversations a token's callers reach (its own name unless shared)."""
        return self.namespaces.get(token_name, token_name)


def http_settings(settings: Settings) -> HTTPSettings:
    """Validate the generic ``http:`` section; errors name the field, never a token."""
    return platform_settings(settings, "http", HTTPSettings)
