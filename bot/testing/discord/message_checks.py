"""What Discord checks in a message body the bot sends or edits: the 2000-character content,
at most 10 embeds, the flags a bot may set, ``allowed_mentions``'s shape, and that something
is left to send (50006). Errors come back in Discord's 50035 form, every field at once."""

from __future__ import annotations

from typing import Any

from bot.testing.discord.wire import (
    DiscordError,
    JSONDict,
    field_error,
    invalid_form,
    merge_errors,
)

__all__ = [
    "EMPTY_MESSAGE",
    "EPHEMERAL",
    "LOADING",
    "MAX_CONTENT",
    "MAX_EMBEDS",
    "SENDABLE_FLAGS",
    "content_of",
    "validate_message",
]

MAX_CONTENT = 2000
MAX_EMBEDS = 10
EMPTY_MESSAGE = "Cannot send an empty message"
EPHEMERAL = 1 << 6
LOADING = 1 << 7
SENDABLE_FLAGS = (1 << 2) | (1 << 12) | (1 << 15)  # SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, V2
PARSE_TYPES = ("everyone", "roles", "users")


def validate_message(
    body: JSONDict,
    files: list[tuple[str, int]],
    allowed_flags: int,
    *,
    files_kept: bool = False,
) -> None:
    """Raise Discord's 50035 (each field's error) or 50006 (nothing to send) for ``body``."""
    errors: JSONDict = {}
    content = content_of(body)
    if content is not None and len(content) > MAX_CONTENT:
        message = f"Must be {MAX_CONTENT} or fewer in length."
        merge_errors(errors, field_error(("content",), "BASE_TYPE_MAX_LENGTH", message))
    embeds = body.get("embeds") or []
    if not isinstance(embeds, list) or len(embeds) > MAX_EMBEDS:
        message = f"Must be {MAX_EMBEDS} or fewer in length."
        merge_errors(errors, field_error(("embeds",), "BASE_TYPE_MAX_LENGTH", message))
    flags = body.get("flags")
    if flags is not None and int(flags) & ~allowed_flags & ~(EPHEMERAL | LOADING):
        merge_errors(errors, field_error(("flags",), "MESSAGE_FLAGS_INVALID", "Invalid flags"))
    merge_errors(errors, _allowed_mentions_errors(body.get("allowed_mentions")))
    if errors:
        raise invalid_form(errors)
    has_any = bool(content) or bool(embeds) or bool(files) or files_kept
    has_any = has_any or bool(body.get("components") or body.get("sticker_ids") or body.get("poll"))
    if not has_any:
        raise DiscordError(400, EMPTY_MESSAGE, 50006)


def content_of(body: JSONDict) -> str | None:
    content = body.get("content")
    return None if content is None else str(content)


def _allowed_mentions_errors(allowed: Any) -> JSONDict:
    if allowed is None:
        return {}
    if not isinstance(allowed, dict):
        return field_error(
            ("allowed_mentions",), "DICT_TYPE_CONVERT", "Only dictionaries may be used."
        )
    errors: JSONDict = {}
    parse = allowed.get("parse") or []
    for index, kind in enumerate(parse):
        if kind not in PARSE_TYPES:
            message = "Value must be one of ('everyone', 'roles', 'users')."
            merge_errors(
                errors,
                field_error(("allowed_mentions", "parse", index), "BASE_TYPE_CHOICES", message),
            )
    for kind in ("users", "roles"):
        ids = allowed.get(kind) or []
        if kind in parse and ids:
            message = f'parse:["{kind}"] and {kind}: [ids...] are mutually exclusive.'
            merge_errors(
                errors,
                field_error(
                    ("allowed_mentions",), "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", message
                ),
            )
        if len(ids) > 100:
            message = "Must be 100 or fewer in length."
            merge_errors(
                errors, field_error(("allowed_mentions", kind), "BASE_TYPE_MAX_LENGTH", message)
            )
    return errors
