"""HTTP: an OpenAI-compatible chat endpoint, the admin API and a dashboard (aiohttp).

The entry point finds this package by name (``adapters.http``) and calls
:func:`create_adapter`; configuration lives under ``http:`` (see ``settings.py``). With only
``http.enabled``, ``python -m bot run`` serves just this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.http.server import HTTPAdapter
    from adapters.http.settings import HTTPSettings
    from bot.config import Settings
    from bot.doctor import Check
    from bot.platform.seam import Platform

__all__ = ["check_settings", "create_adapter", "diagnose"]


def check_settings(settings: Settings) -> HTTPSettings:
    """Validate ``http:`` (``check-config`` prints what this returns; start-up checks it)."""
    from adapters.http.settings import http_settings

    return http_settings(settings)


def create_adapter(platform: Platform) -> HTTPAdapter:
    from adapters.http.server import HTTPAdapter

    return HTTPAdapter(platform)


async def diagnose(settings: Settings) -> list[Check]:
    """``python -m bot doctor``'s HTTP rows (see :mod:`adapters.http.doctor`)."""
    from adapters.http.doctor import diagnose

    return await diagnose(settings)
