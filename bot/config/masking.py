"""Secrets out of sight: the redactor's list, masked dumps, URLs fit for logs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pydantic import BaseModel, SecretStr

from bot.config.base import looks_secret

if TYPE_CHECKING:
    from bot.config.settings import Settings


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
                if looks_secret(str(key)):
                    found.extend(_strings(item))  # tokens: {ops: ...}: every value is one
                else:
                    walk(item)

    walk(settings)
    urls = [endpoint.base_url for endpoint in (settings.llm, *settings.llm.fallbacks)]
    if settings.memory.embeddings.base_url:
        urls.append(settings.memory.embeddings.base_url)
    urls += [server.url for server in settings.mcp.servers.values() if server.url]
    for url in urls:  # gateways put keys in query strings, some in the URL's userinfo
        found.extend(value for _, value in parse_qsl(urlsplit(url).query))
        found.append(urlsplit(url).password or "")
    for server in settings.mcp.servers.values():  # "Bearer X": X alone may be logged too
        for header in server.headers.values():
            scheme, _, credential = header.get_secret_value().partition(" ")
            if credential and scheme.lower() in ("bearer", "basic", "token"):
                found.append(credential)
    storage_password = settings.storage.effective_url.password()
    if storage_password:
        found.append(storage_password)
    return [s for s in found if s]


def safe_url(url: str) -> str:
    """A URL fit for logs: no credentials, no query string (gateways put keys there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def masked_dump(settings: Settings) -> dict[str, Any]:
    """The effective config as plain data with every secret replaced by ``***``.

    The ``telegram:`` / ``discord:`` sections and plugin settings are as given, not validated:
    ``check-config`` prints their validated forms instead (``bot.doctor.config_report``).
    """
    masked: dict[str, Any] = mask_secrets(settings.model_dump(mode="json"))
    return masked


def mask_secrets(node: Any, secret: bool = False) -> Any:
    """Plain data with the value of every secret-looking key (token, key, ...) as ``***``,
    also each value of a mapping under such a key (``admin_tokens: {ops: ***}``)."""
    if isinstance(node, str):
        return "***" if secret and node else node
    if isinstance(node, dict):
        return {k: mask_secrets(v, secret or looks_secret(str(k))) for k, v in node.items()}
    if isinstance(node, list):
        return [mask_secrets(v, secret) for v in node]
    return node


def _strings(node: Any) -> list[str]:
    """Every string in ``node`` (a secret's value, or a mapping or list of them)."""
    if isinstance(node, SecretStr):
        return [node.get_secret_value()]
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for item in node.values() for s in _strings(item)]
    if isinstance(node, list | tuple):
        return [s for item in node for s in _strings(item)]
    return []
