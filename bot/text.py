"""Lone UTF-16 surrogates replaced with U+FFFD, so one message cannot break encoding.

JSON may carry half of a UTF-16 pair (``"\\ud800"``); Python decodes it into a ``str`` that has
no UTF-8 form, so the LLM request, the SQLite write and UTF-16 offset arithmetic all fail on
it. Adapters pass every incoming text and display name through :func:`clean_text` (the edge);
the LLM client uses :func:`clean_json` on a request body that failed to encode (the backstop).

A surrogate pair written as two code points becomes the one character it stands for; each lone
surrogate becomes one U+FFFD. Both keep the text's length in UTF-16 code units, so Telegram's
entity offsets still point at the same spans.
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced; the same object when it encodes as UTF-8."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean_optional(text: str | None) -> str | None:
    return None if text is None else clean_text(text)


def clean_json(value: Any) -> Any:
    """A JSON-shaped value (dicts, lists, strings) with every string, keys too, cleaned."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_json(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(item) for item in value]
    return value


def counted(number: int, one: str, many: str | None = None) -> str:
    """``1 turn``, ``2 turns``, ``1,500 audit entries``: a count a person reads."""
    return f"{number:,} {one if number == 1 else (many or one + 's')}"
