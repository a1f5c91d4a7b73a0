"""Web search through the configured provider: SearxNG's JSON API or the Brave Search API.

The endpoint is the operator's (a self-hosted SearxNG is usually on localhost), so the address
check of :mod:`plugins.web.guard` does not apply to it; but it is asked once, without following
redirects: a search answer that points elsewhere is an error, never a hop to another host. The
API key goes in its header only: it is never logged, and no error text carries it.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
from yarl import URL

from bot.plugins import UserFacingError
from plugins.web.settings import Settings

__all__ = ["Hit", "search"]

log = logging.getLogger(__name__)

MAX_TITLE = 200
MAX_SNIPPET = 400
MAX_URL = 600  # a longer result link is dropped (tracking junk, or a flood)
_TAGS = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str


async def search(query: str, count: int, settings: Settings) -> list[Hit]:
    """Up to ``count`` results for ``query``; a failure is a UserFacingError saying which."""
    url, headers = _request(query, count, settings)
    name = "Brave Search" if settings.provider == "brave" else "SearxNG"
    try:
        async with (
            aiohttp.ClientSession(trust_env=False) as session,
            asyncio.timeout(settings.timeout),
            session.get(url, headers=headers, allow_redirects=False) as response,
        ):
            if response.status != 200:
                raise _error(_status_text(name, response, settings))
            data = await _json(response, name, settings.max_page_bytes)
    except TimeoutError:
        raise _error(f"{name} did not answer within {settings.timeout:g} seconds.") from None
    except aiohttp.ClientError as exc:
        log.warning("web_search: %s unreachable: %s", name, type(exc).__name__)
        raise _error(f"{name} could not be reached ({type(exc).__name__}).") from None
    return _hits(data, settings.provider)[:count]


def _request(query: str, count: int, settings: Settings) -> tuple[URL, dict[str, str]]:
    headers = {"User-Agent": settings.user_agent, "Accept": "application/json"}
    if settings.provider == "brave":
        assert settings.api_key is not None  # the settings refuse brave without one
        headers["X-Subscription-Token"] = settings.api_key.get_secret_value()
        url = URL(f"{settings.endpoint}/res/v1/web/search")
        return url.update_query(q=query, count=str(min(count, 20))), headers
    url = URL(f"{settings.endpoint}/search")
    return url.update_query(q=query, format="json"), headers


def _status_text(name: str, response: aiohttp.ClientResponse, settings: Settings) -> str:
    status = response.status
    log.warning("web_search: %s answered HTTP %s", name, status)
    if 300 <= status < 400:
        return (
            f"{name} answered with a redirect (HTTP {status}), which is not followed; the"
            " operator should set base_url to the address it answers at."
        )
    if status == 429:
        wait = _retry_after(response.headers.get("Retry-After"))
        when = f"in {wait} seconds" if wait is not None else "later"
        return f"{name} is rate-limiting the bot (HTTP 429); try again {when}."
    if settings.provider == "brave" and status in (401, 403, 422):
        return (
            f"Brave Search refused the API key (HTTP {status}); the operator should check the"
            " web plugin's api_key."
        )
    if settings.provider == "searxng" and status == 403:
        return (
            "SearxNG refused the JSON format (HTTP 403); the operator should enable json under"
            " search: formats: in its settings.yml."
        )
    return f"{name} answered HTTP {status}."


def _retry_after(value: str | None) -> int | None:
    if not value:
        return None
    if value.strip().isdigit():
        return int(value.strip())
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0, round((moment - datetime.now(UTC)).total_seconds()))


async def _json(response: aiohttp.ClientResponse, name: str, limit: int) -> Any:
    body = bytearray()
    async for chunk in response.content.iter_chunked(64 * 1024):
        body += chunk
        if len(body) > limit:
            raise _error(f"{name}'s answer is larger than {limit:,} bytes.")
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _error(f"{name}'s answer is not JSON.") from None


def _hits(data: Any, provider: str) -> list[Hit]:
    if not isinstance(data, dict):
        return []
    if provider == "brave":
        web = data.get("web")
        items, text_key = (web.get("results") if isinstance(web, dict) else None), "description"
    else:
        items, text_key = data.get("results"), "content"
    hits = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        url = item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        if len(url) > MAX_URL:
            continue
        title = _plain(item.get("title"), MAX_TITLE)
        hits.append(Hit(title or url, url, _plain(item.get(text_key), MAX_SNIPPET)))
    return hits


def _plain(value: Any, limit: int) -> str:
    """A provider's text as plain text: tags removed (Brave marks matches with <strong>)."""
    if not isinstance(value, str):
        return ""
    text = _SPACES.sub(" ", html.unescape(_TAGS.sub("", value))).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _error(text: str) -> UserFacingError:
    return UserFacingError(text, chat_text=text)
