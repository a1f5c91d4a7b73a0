"""Telegram's ``parse_mode=HTML`` parser, ported from TDLib's ``parse_html`` (MessageEntity.cpp).

The Bot API server runs this exact algorithm, so a bot that renders HTML must survive it:
the fake rejects what Telegram rejects, with the same ``can't parse entities`` texts and byte
offsets, and produces the same plain text and entities (offsets and lengths in UTF-16 code
units). Deliberately byte-for-byte faithful rather than "a nicer HTML parser": unknown named
entities such as ``&nbsp;`` pass through literally, ``a < b`` is an error, and attribute
values may be unquoted name tokens, exactly as on the real server.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TelegramHTMLError", "parse_html", "utf16_len"]

_PREFIX = "Bad Request: can't parse entities: "
_TAGS = frozenset(
    {
        "a", "b", "strong", "i", "em", "s", "strike", "del", "u", "ins", "tg-spoiler",
        "tg-emoji", "span", "pre", "code", "blockquote",
    }
)  # fmt: skip
_SIMPLE = {
    "i": "italic",
    "em": "italic",
    "b": "bold",
    "strong": "bold",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "u": "underline",
    "ins": "underline",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
}
_SPACE = frozenset(b" \t\r\n\0\v")
_NAMED = {b"lt": ord("<"), b"gt": ord(">"), b"amp": ord("&"), b"quot": ord('"')}
# TDLib's sort_entities breaks offset/length ties by this priority (lower first).
_PRIORITY = {
    "mention": 50, "hashtag": 50, "bot_command": 50, "url": 50, "email": 50,
    "bold": 90, "italic": 91, "underline": 92, "strikethrough": 93, "spoiler": 94,
    "code": 20, "pre": 11, "blockquote": 0, "expandable_blockquote": 0,
    "text_link": 49, "text_mention": 49, "custom_emoji": 99, "cashtag": 50,
}  # fmt: skip


class TelegramHTMLError(ValueError):
    """The text is not valid Telegram HTML; ``description`` is the Bot API's error text."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, Telegram's unit for offsets and the 4096 limit."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def sort_entities(entities: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """TDLib's order: by offset, longer first, then by type priority."""
    return sorted(entities, key=lambda e: (e["offset"], -e["length"], _PRIORITY.get(e["type"], 50)))


def _fail(message: str) -> TelegramHTMLError:
    return TelegramHTMLError(_PREFIX + message)


def _decode_entity(text: bytes, pos: int) -> tuple[int, int]:
    """``(code point, position after it)`` of an HTML entity at ``pos``; code 0 if none."""
    end = pos + 1
    code = 0
    if text[end] == ord("#"):
        end += 1
        if text[end] == ord("x"):
            end += 1
            while chr(text[end]) in "0123456789abcdefABCDEF":
                code = code * 16 + int(chr(text[end]), 16)
                end += 1
        else:
            while 0x30 <= text[end] <= 0x39:
                code = code * 10 + text[end] - 0x30
                end += 1
        if code == 0 or code >= 0x10FFFF or end - pos >= 10:
            return 0, pos
    else:
        while chr(text[end]).isascii() and chr(text[end]).isalpha():
            end += 1
        code = _NAMED.get(text[pos + 1 : end], 0)
        if code == 0:
            return 0, pos
    return code, end + 1 if text[end] == ord(";") else end


def _utf8(code: int) -> bytes:
    return chr(code).encode("utf-8", "surrogatepass")


def parse_html(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Plain text and Bot API ``MessageEntity`` dicts; raises ``TelegramHTMLError``.

    A ``text_mention`` from ``<a href="tg://user?id=N">`` carries only ``{"id": N}`` as its
    user; the caller fills in the full user (or drops the entity for an unknown user).
    """
    data = text.encode("utf-8", "surrogatepass") + b"\0"  # the sentinel stands in for C's NUL
    size = len(data) - 1
    out = bytearray()
    entities: list[dict[str, Any]] = []
    stack: list[tuple[str, str, int, int]] = []  # tag, argument, utf16 offset, byte offset
    offset = 0
    i = 0
    while i < size:
        c = data[i]
        if c == ord("&"):
            code, after = _decode_entity(data, i)
            if code:
                out += _utf8(code)
                offset += 2 if code > 0xFFFF else 1
                i = after
                continue
        if c != ord("<"):
            out.append(c)
            if c & 0xC0 != 0x80:
                offset += 2 if c >= 0xF0 else 1
            i += 1
            continue
        begin = i
        i += 1
        if data[i] != ord("/"):
            i, tag, argument = _start_tag(data, begin)
            stack.append((tag, argument, offset, len(out)))
            continue
        if not stack:
            raise _fail(f"Unexpected end tag at byte offset {begin}")
        while data[i] not in _SPACE and data[i] != ord(">"):
            i += 1
        end_name = data[begin + 2 : i].decode("utf-8", "replace").lower()
        while data[i] in _SPACE and data[i] != 0:
            i += 1
        if data[i] != ord(">"):
            raise _fail(f"Unclosed end tag at byte offset {begin}")
        i += 1
        tag, argument, start, start_byte = stack.pop()
        if end_name and end_name != tag:
            raise _fail(
                f'Unmatched end tag at byte offset {begin}, expected "</{tag}>", '
                f'found "</{end_name}>"'
            )
        if offset > start:
            content = bytes(out[start_byte:]).decode("utf-8", "replace")
            _close(entities, tag, argument, start, offset - start, content)
    if stack:
        raise _fail(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    for entity in entities:
        if entity["type"] == "code":
            entity.pop("language", None)
    try:
        plain = bytes(out).decode("utf-8")
    except UnicodeDecodeError:
        raise TelegramHTMLError(
            "Bad Request: text contains invalid Unicode characters after decoding HTML "
            "entities, check for unmatched surrogate code units"
        ) from None
    return plain, sort_entities(entities)


def _start_tag(data: bytes, begin: int) -> tuple[int, str, str]:
    """Parse ``<tag attr=...>`` at ``begin``: position after ``>``, tag name, argument."""
    i = begin + 1
    while data[i] not in _SPACE and data[i] != ord(">"):
        i += 1
    if data[i] == 0:
        raise _fail(f"Unclosed start tag at byte offset {begin}")
    tag = data[begin + 1 : i].decode("utf-8", "replace").lower()
    if tag not in _TAGS:
        raise _fail(f'Unsupported start tag "{tag}" at byte offset {begin}')
    argument = ""
    while data[i] != ord(">"):
        while data[i] != 0 and data[i] in _SPACE:
            i += 1
        if data[i] == ord(">"):
            break
        name_begin = i
        while data[i] not in _SPACE and data[i] not in b"=>/\"'":
            i += 1
        name = data[name_begin:i]
        if not name:
            raise _fail(f'Empty attribute name in the tag "{tag}" at byte offset {begin}')
        while data[i] != 0 and data[i] in _SPACE:
            i += 1
        if data[i] != ord("="):
            if data[i] == 0:
                raise _fail(f'Unclosed start tag "{tag}" at byte offset {begin}')
            if tag == "blockquote" and name == b"expandable":
                argument = "1"
            continue
        i += 1
        while data[i] != 0 and data[i] in _SPACE:
            i += 1
        if data[i] == 0:
            raise _fail(f'Unclosed start tag "{tag}" at byte offset {begin}')
        i, value = _attribute_value(data, i)
        if data[i] == 0:
            raise _fail(f"Unclosed start tag at byte offset {begin}")
        if tag == "a" and name == b"href":
            argument = value
        elif tag == "code" and name == b"class" and value.startswith("language-"):
            argument = value[9:]
        elif tag == "span" and name == b"class" and value.startswith("tg-"):
            argument = value[3:]
        elif (tag == "tg-emoji" and name == b"emoji-id") or (
            tag == "blockquote" and name == b"expandable"
        ):
            argument = value if tag == "tg-emoji" else "1"
    if tag == "span" and argument != "spoiler":
        raise _fail(f'Tag "span" must have class "tg-spoiler" at byte offset {begin}')
    return i + 1, tag, argument


def _attribute_value(data: bytes, i: int) -> tuple[int, str]:
    """A quoted string (entities decoded) or a lower-cased name token, and where it ends."""
    if data[i] not in b"'\"":
        start = i
        while chr(data[i]).isascii() and (chr(data[i]).isalnum() or data[i] in b".-"):
            i += 1
        if data[i] not in _SPACE and data[i] != ord(">"):
            raise _fail(f"Unexpected end of name token at byte offset {start}")
        return i, data[start:i].decode("ascii").lower()
    quote = data[i]
    i += 1
    value = bytearray()
    while data[i] != quote and data[i] != 0:
        if data[i] == ord("&"):
            code, after = _decode_entity(data, i)
            if code:
                value += _utf8(code)
                i = after
                continue
        value.append(data[i])
        i += 1
    if data[i] == quote:
        i += 1
    return i, value.decode("utf-8", "replace")


def _close(
    entities: list[dict[str, Any]], tag: str, argument: str, offset: int, length: int, body: str
) -> None:
    """Append the entity a closed, non-empty tag produces (TDLib's end-tag branch)."""
    span = {"offset": offset, "length": length}
    last = entities[-1] if entities else None
    same = last is not None and last["offset"] == offset and last["length"] == length
    if tag in _SIMPLE:
        entities.append({"type": _SIMPLE[tag], **span})
    elif tag == "tg-emoji":
        if not argument.isdigit() or int(argument) == 0 or int(argument) >= 2**63:
            raise _fail("Invalid custom emoji identifier specified")
        entities.append({"type": "custom_emoji", **span, "custom_emoji_id": argument})
    elif tag == "a":
        url = (argument or body).strip()
        if url.startswith("tg://user?id=") and url[13:].isdigit():
            entities.append({"type": "text_mention", **span, "user": {"id": int(url[13:])}})
        elif (checked := _checked_link(url)) is not None:
            entities.append({"type": "text_link", **span, "url": checked})
    elif tag == "pre":
        if last is not None and same and last["type"] == "code" and last.get("language"):
            last["type"] = "pre"
        else:
            entities.append({"type": "pre", **span})
    elif tag == "code":
        if last is not None and same and last["type"] == "pre" and argument:
            last["language"] = argument
        else:
            entities.append({"type": "code", **span, "language": argument})
    elif tag == "blockquote":
        entities.append({"type": "expandable_blockquote" if argument else "blockquote", **span})


def _checked_link(url: str) -> str | None:
    """A rough ``LinkManager::get_checked_link``: schemeless hosts get ``http://``."""
    if not url or any(ch.isspace() for ch in url):
        return None
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("http", "https", "tg", "ton", "ftp"):
        return url if rest else None
    if sep or "." not in url.split("/")[0]:
        return None
    host, slash, path = url.partition("/")
    return f"http://{host}/{path}" if slash else f"http://{url}/"
