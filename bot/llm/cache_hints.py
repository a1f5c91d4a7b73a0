"""Provider prompt caches on the wire: the hint a request carries, the count its answer reports.

**The hint.**
OpenAI routes requests with the same key to the same cache machines, so one conversation's
turns find the prefix the previous turn left there. The key must be stable per conversation and
must not reveal it: conversation keys hold platform chat and user ids, and Telegram's are
guessable, so the key is an HMAC-SHA256 of the conversation key, keyed by the endpoint's API key
(something only this deployment and its provider know; without one, a fixed project key, which
only hides the ids from a casual reader). 32 hex digits (128 bits) keep it well under the
64 characters OpenAI accepts. Changing the API key changes every conversation's hint: the next
turn of each misses the cache once.

**The count.** Providers report the input tokens their cache served (billed at a discount) in
different fields; :func:`usage_of` reads them into :class:`~bot.values.Usage`.
"""

from __future__ import annotations

import hashlib
import hmac

from openai.types import CompletionUsage

from bot.values import Usage

__all__ = ["HINT_CHARS", "cache_hint", "usage_of"]

HINT_CHARS = 32
_NO_SECRET = b"parlour prompt_cache_key v1"  # an endpoint without an API key (a local server)


def cache_hint(conversation_key: str, secret: str | None) -> str:
    """A short, stable, unguessable stand-in for ``conversation_key``."""
    key = secret.encode() if secret else _NO_SECRET
    message = conversation_key.encode(errors="surrogatepass")
    digest = hmac.new(key, message, hashlib.sha256).hexdigest()
    return digest[:HINT_CHARS]


def usage_of(reported: CompletionUsage) -> Usage:
    """The provider's figures. Cached input: OpenAI's ``prompt_tokens_details.cached_tokens``,
    or DeepSeek's ``prompt_cache_hit_tokens`` (not in the SDK's model: an extra field); at most
    the prompt, since a server's odd figure must not book more cached than sent."""
    details = reported.prompt_tokens_details
    cached = _count(details.cached_tokens if details is not None else None)
    cached = max(cached, _count((reported.model_extra or {}).get("prompt_cache_hit_tokens")))
    prompt = reported.prompt_tokens
    return Usage(prompt, reported.completion_tokens, max(0, min(cached, prompt)))


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
