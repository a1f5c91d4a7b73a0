"""What every backend can hold, checked before a value reaches one.

A driver's error for a number or a character it cannot store (SQLite's ``OverflowError``,
PostgreSQL's "value out of int64 range" or "invalid byte sequence ... 0x00") must become a
"not found" or a "bad parameter", never a 500 or a tool's answer to the model:

* integers (ids, offsets, cursors) are signed 64-bit in both databases: :func:`fits_int64`;
* PostgreSQL text cannot hold NUL (SQLite can): :func:`storable_text` makes it U+FFFD, on
  every backend where the stored text must not differ between them (memories);
* keys (chat and conversation keys, job ids) never hold a control character or a lone
  surrogate (no platform makes one; an HTTP caller's ``user`` refuses them): :func:`is_key`
  tells a key that cannot exist from one that merely is not stored.
"""

from __future__ import annotations

import re

__all__ = ["INT64_MAX", "INT64_MIN", "REPLACEMENT", "fits_int64", "is_key", "storable_text"]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
REPLACEMENT = "\ufffd"

_NOT_IN_A_KEY = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # Unicode Cc and Cs


def fits_int64(value: int) -> bool:
    """Whether ``value`` fits a signed 64-bit column (an id, an offset, a cursor)."""
    return INT64_MIN <= value <= INT64_MAX


def storable_text(text: str) -> str:
    """``text`` with each NUL as U+FFFD (the same object when it has none)."""
    return text.replace("\x00", REPLACEMENT) if "\x00" in text else text


def is_key(text: str) -> bool:
    """Whether ``text`` could be a stored key: no control character, no lone surrogate."""
    return _NOT_IN_A_KEY.search(text) is None
