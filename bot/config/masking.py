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
                if isinstance(item, str) and looks_secret(str(key)):
                    found.append(item)
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
    ``check-config`` prints their validated forms instead (``bot.config_report``).
    """
    masked: dict[str, Any] = mask_secrets(settings.model_dump(mode="json"))
    return masked


def mask_secrets(node: Any) -> Any:
    """Plain data with the value of every secret-looking key (token, key, ...) as ``***``."""
    if isinstance(node, dict):
        return {
            k: ("***" if v and looks_secret(str(k)) and isinstance(v, str) else mask_secrets(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [mask_secrets(v) for v in node]
    return node
