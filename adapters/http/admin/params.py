"""Numbers and keys from a query or a path, read once for the admin API and the dashboard and
checked against what every database can hold (:mod:`bot.storage.bounds`) before any reaches
one: a number past signed 64-bit is a bad parameter (400), a key with a character no key has
is an unknown chat (404), never a driver's error (500)."""

from __future__ import annotations

from aiohttp import web

from bot.storage.bounds import INT64_MAX, is_key

__all__ = ["INT64_MAX", "BadParameter", "is_key", "positive_id", "query_int"]


class BadParameter(ValueError):
    """A query or path value the route cannot take; its text says which and why (a 400)."""


def query_int(
    request: web.Request, name: str, default: int | None, low: int, high: int = INT64_MAX
) -> int | None:
    """The whole number ``name`` of the query, ``low`` to ``high``; ``default`` when absent
    or empty. Raises :class:`BadParameter`."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    value = _whole(raw.strip())
    if value is None:
        raise BadParameter(f"{name} must be an integer")
    if not low <= value <= high:
        raise BadParameter(f"{name} must be an integer from {low} to {high}")
    return value


def positive_id(raw: str) -> int | None:
    """A row id from a path: digits only, 1 to 2**63 - 1; None for anything else."""
    value = _whole(raw) if raw.isascii() and raw.isdigit() else None
    return value if value is not None and 1 <= value <= INT64_MAX else None


def _whole(text: str) -> int | None:
    """``text`` as an int (ASCII sign and digits only: no ``1_000``, no Arabic-Indic digits),
    or None; at most 30 characters, so a megabyte of digits is never converted."""
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not (digits.isascii() and digits.isdigit()) or len(text) > 30:
        return None
    return int(text)
