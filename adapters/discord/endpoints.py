"""Point discord.py 2 at another REST base and gateway (a proxy, or the test kit's FakeDiscord).

discord.py has no option for this, but both URLs are plain class attributes read at use
time, so setting them is a supported-in-practice override rather than a patch of any code:

* REST: ``discord.http.Route.BASE`` (a ``ClassVar``, ``https://discord.com/api/v10``). Every
  ``Route`` copies ``BASE + path`` into its URL when it is created, including the
  interaction callbacks, followups and ``@original`` edits of ``discord/webhook/async_.py``
  (that adapter builds the same ``Route`` class; it has no base URL of its own), so new
  requests of every client in the process go to the new base at once.
* Gateway: ``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`` (``wss://gateway.discord.gg/``).
  ``Client.connect`` in discord.py 2 never calls ``GET /gateway/bot``: the first connection,
  and every one after an op 9 INVALID_SESSION, goes to ``DEFAULT_GATEWAY`` (``from_client``
  adds ``?v=10&encoding=json&compress=zlib-stream``, or ``zstd-stream`` when the
  ``zstandard`` module is importable; no Client option disables compression); RESUMEs go to
  READY's ``resume_gateway_url``. Only ``AutoShardedClient`` asks ``GET /gateway/bot``, which
  is under ``Route.BASE`` and so reaches the new REST base, which answers its own gateway.

Limits: the setting is process-wide (every client in the process), so call it before
``client.start()``; ``discord.http._set_api_version`` would reset ``Route.BASE``; CDN asset
URLs (``discord.Asset.BASE``) are not redirected, and ``Webhook.from_url`` / ``Webhook.url``
still only know ``discord.com`` webhook URLs.
"""

from __future__ import annotations

import discord.http
import yarl
from discord.gateway import DiscordWebSocket

__all__ = [
    "DISCORD_API_BASE",
    "DISCORD_GATEWAY",
    "current_endpoints",
    "reset_endpoints",
    "use_endpoints",
]

DISCORD_API_BASE = "https://discord.com/api/v10"
DISCORD_GATEWAY = "wss://gateway.discord.gg/"


def use_endpoints(api_base: str, gateway_url: str | None = None) -> None:
    """Send discord.py's REST calls to ``api_base`` (``http(s)://host/api/v10``, version
    included) and, when given, connect its gateway to ``gateway_url`` (``ws(s)://...``; any
    query is replaced by discord.py's own). Idempotent; ``reset_endpoints`` undoes it.

    With ``gateway_url`` None the gateway is left as it is: a plain ``Client`` then still
    connects to the current ``DEFAULT_GATEWAY`` (Discord's, unless changed before).
    """
    base = yarl.URL(api_base)
    if base.scheme not in ("http", "https") or not base.host:
        raise ValueError(f"api_base must be an http(s) URL, got {api_base!r}")
    if gateway_url is not None:
        gateway = yarl.URL(gateway_url)
        if gateway.scheme not in ("ws", "wss") or not gateway.host:
            raise ValueError(f"gateway_url must be a ws(s) URL, got {gateway_url!r}")
        DiscordWebSocket.DEFAULT_GATEWAY = gateway.with_query(None).with_path(gateway.path or "/")
    discord.http.Route.BASE = api_base.rstrip("/")


def reset_endpoints() -> None:
    """Back to Discord's own REST base and gateway."""
    use_endpoints(DISCORD_API_BASE, DISCORD_GATEWAY)


def current_endpoints() -> tuple[str, str]:
    """The REST base and gateway URL discord.py uses now."""
    return discord.http.Route.BASE, str(DiscordWebSocket.DEFAULT_GATEWAY)
