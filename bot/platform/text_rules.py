"""The text rules every splitter and the reply cap follow, written once: what is shown as one
character (a cheap grapheme rule: combining marks, joiners, variation selectors, skin tones, tag
sequences, flag pairs, CRLF), and what opens and closes a fenced code block (CommonMark).

Cheap on purpose: a full UAX #29 segmentation costs more than a reply's split is worth, and a
cut that misses a rare cluster only splits a glyph, never the text.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "FENCE",
    "FENCE_CLOSER",
    "NEWLINES",
    "ZWJ",
    "clusters",
    "continues",
    "extends",
    "is_flag_half",
]

ZWJ = "\u200d"
NEWLINES = frozenset({"\n", "\r", "\r\n"})
FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
"""A fence line: indent, the fence, the rest (an opener's info string)."""
FENCE_CLOSER = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


def is_flag_half(char: str) -> bool:
    """A regional indicator: two of them make one flag."""
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


def extends(char: str) -> bool:
    """Whether ``char`` attaches to the character before it, whatever that is."""
    code = ord(char)
    if char == ZWJ or unicodedata.category(char) in ("Mn", "Me", "Mc"):
        return True
    return 0xFE00 <= code <= 0xFE0F or 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F


def continues(cluster: str, char: str) -> bool:
    """Whether ``char`` belongs to the cluster that ends with ``cluster`` (built left to right)."""
    if cluster == "\r":
        return char == "\n"
    if cluster == "\n" or char in NEWLINES:
        return False
    if cluster.endswith(ZWJ) or extends(char):
        return True
    return is_flag_half(char) and len(cluster) == 1 and is_flag_half(cluster)


def clusters(text: str) -> list[str]:
    """``text`` as what is shown as one character each (joined back it is ``text``)."""
    out: list[str] = []
    for char in text:
        if out and continues(out[-1], char):
            out[-1] += char
        else:
            out.append(char)
    return out
