"""Keep secrets out of logs: a logging filter that masks known secret values and token shapes.

The entry point registers the config's secrets and attaches :class:`RedactingFilter` to every
handler it installs. Code should never log a secret in the first place; this is the second fence
(HTTP libraries log URLs, and a Telegram token lives in the URL).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

MASK = "***"
_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-]{8,}"),  # OpenAI-style keys
    re.compile(r"(?<!\d)\d{6,12}:[A-Za-z0-9_\-]{30,}"),  # Telegram bot tokens
    re.compile(r"(?i)(authorization:?\s*(?:bearer|bot)\s+)[^\s'\"]+"),
    re.compile(r"(/webhooks/\d+/)[\w.\-]{20,}"),  # Discord interaction/webhook tokens in URLs
    re.compile(r"""(['"]token['"]\s*:\s*['"])[^'"]+"""),  # "token": "..." in logged payloads
)


class Redactor:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        self._secrets.update(s for s in secrets if s and len(s) >= 4)

    def __call__(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, MASK)
        for pattern in _PATTERNS:
            text = pattern.sub(
                lambda m: (m.group(1) + MASK) if m.lastindex else MASK,
                text,
            )
        return text


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
    for noisy in ("httpx", "httpx2", "httpcore", "openai", "aiosqlite", "apscheduler"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))
