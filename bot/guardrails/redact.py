"""Keep secrets out of logs and CLI output: known secret values and token shapes are masked.

The entry point registers the config's secrets and attaches :class:`RedactingFilter` to every
handler it installs; ``check-config`` and every CLI error pass through the same
:class:`Redactor`. Code should never print or log a secret in the first place; this is the
second fence (HTTP libraries log URLs, a Telegram token lives in the URL, and a secret typed
under the wrong key is not known as one). Besides the registered values it masks, wherever they
appear: Telegram bot tokens, OpenAI-style ``sk-`` keys, Discord bot tokens (three base64url
parts), the password in ``scheme://user:password@host``, Authorization headers, and long
random-looking values under a key named like a token, key, secret or password.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

MASK = "***"
# A token's characters: a match is widened to the whole run of them around it, so a token glued
# to text that looks like one (or that another match ran into) is masked whole.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.:")


@dataclass(frozen=True, slots=True)
class _Shape:
    pattern: re.Pattern[str]  # masks group "secret" if it has one, else the whole match
    widen: bool = True  # mask the whole run of token characters around it
    random_only: bool = False  # only values that look random (under a secret-sounding key)


# Look-behinds let a pattern start only where a run of its characters starts: one attempt per
# run, so a long blob in a log line costs linear time, not quadratic.
_SHAPES = (
    _Shape(re.compile(r"sk-[A-Za-z0-9_\-]{8,}")),  # OpenAI-style keys
    _Shape(re.compile(r"(?<!\d)\d{6,}:[A-Za-z0-9_\-]{30,}")),  # Telegram bot tokens
    # Discord bot tokens (and JWTs): base64url parts joined by dots, the first one long.
    _Shape(re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]{6,}){2,}")),
    # The password in scheme://user:password@host (or scheme:/..., as a Path prints it).
    _Shape(
        re.compile(r"(?i)(?<![a-z0-9+.\-])[a-z0-9+.\-]+:/{1,2}[^\s/:@]*:(?P<secret>[^\s/@]+)@"),
        widen=False,
    ),
    _Shape(re.compile(r"(?i)authorization:?\s*(?:bearer|bot|basic)\s+(?P<secret>[^\s'\"]+)")),
    _Shape(re.compile(r"/webhooks/\d+/(?P<secret>[\w.\-]{20,})")),  # Discord webhook tokens
    _Shape(re.compile(r"""['"]token['"]\s*:\s*['"](?P<secret>[^'"]+)""")),  # "token": "..."
    _Shape(  # api_key: ..., "client_secret": "...", X-Api-Key: ..., auth_token=...
        re.compile(
            r"(?i)(?:token|key|secret|passw(?:or)?d|pwd)[\w-]*['\"]?\s*[:=]\s*['\"]?"
            r"(?P<secret>[A-Za-z0-9_\-+/=.~]{12,})"
        ),
        random_only=True,
    ),
    # password: ..., db_pwd=...: people's passwords are short and not random.
    _Shape(
        re.compile(r"(?i)(?:passw(?:or)?d|pwd)['\"]?\s*[:=]\s*['\"]?(?P<secret>[^\s'\",;&]{4,})"),
        widen=False,
    ),
)


class Redactor:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        self._secrets.update(s for s in secrets if s and len(s) >= 4)

    def __call__(self, text: str) -> str:
        """``text`` with every known secret and token shape replaced by ``***``.

        Every match is found in the original text and all are masked at once, so one match
        cannot hide another by rewriting the text first.
        """
        spans: list[tuple[int, int]] = []
        for secret in self._secrets:
            start = text.find(secret)
            while start != -1:
                spans.append((start, start + len(secret)))
                start = text.find(secret, start + 1)
        for shape in _SHAPES:
            group = "secret" if "secret" in shape.pattern.groupindex else 0
            for match in shape.pattern.finditer(text):
                if shape.random_only and not _random_looking(match.group(group)):
                    continue
                start, end = match.span(group)
                spans.append(_widened(text, start, end) if shape.widen else (start, end))
        return _masked(text, spans) if spans else text


def _widened(text: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return start, end


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """Each stretch covered by one or more (overlapping) spans becomes one ``***``."""
    parts: list[str] = []
    position = 0
    for start, end in sorted(spans):
        if start > position or not parts:
            parts += [text[position:start], MASK]
        position = max(position, end)
    parts.append(text[position:])
    return "".join(parts)


_WINDOW = 16  # characters judged at a time: a key glued to other text is still a key
_SCANNED = 512  # a value's first characters looked at, so a huge blob costs no more


def _random_looking(value: str) -> bool:
    """Long, mixing letters and digits (or cases) and high in entropy: a key, not a number
    (``max_tokens: 400``) or a name (``key: plugins.clock``).

    Judged over every stretch of :data:`_WINDOW` characters, not the whole value: a key run
    together with a tail of zeros (``api_key: Ab3...00000000``) reads as less random as a
    whole, and must be masked all the same."""
    if len(value) < 12:
        return False
    if len(value) <= _WINDOW:
        return _random_stretch(value)
    scanned = value[:_SCANNED]
    return any(_random_stretch(scanned[i : i + _WINDOW]) for i in range(len(scanned) - _WINDOW + 1))


def _random_stretch(value: str) -> bool:
    classes = (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
    )
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in Counter(value).values())
    return classes >= 2 and entropy >= 3.0


class RedactingFilter(logging.Filter):
    """Rewrites each record's final message (and exception text) with secrets masked."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg = self.redactor(message)
        record.args = None
        if record.exc_text:
            record.exc_text = self.redactor(record.exc_text)
        return True


def configure_logging(level: str, redactor: Redactor) -> None:
    """Entry points only: one stderr handler with the redacting filter."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(redactor))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # mcp logs session ids at INFO and whole messages (tool arguments, results) at DEBUG
    for noisy in ("httpx", "httpx2", "httpcore", "openai", "aiosqlite", "apscheduler", "mcp"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))
