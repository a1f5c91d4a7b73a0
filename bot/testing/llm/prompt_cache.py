"""The fake server's provider prefix cache: ``cached_tokens`` computed the way OpenAI reports it.

OpenAI reuses the longest prefix a request shares with a recent one (same model, same
``prompt_cache_key`` when one is sent), only for prompts of at least 1,024 tokens, in steps of
128 tokens. Tests and benchmarks read the number to see whether the bot's prompts stay
prefix-stable, so the fake must reward exactly that: the same bytes up front.

The prompt is compared in a canonical JSON form (sorted keys, compact): tool definitions first,
then the messages, because providers render tools ahead of the conversation, so tools that
change order or shape between turns break the cache as they would for real. The shared part is
counted with the token counter the fake already uses for ``prompt_tokens`` and scaled to that
count (the JSON punctuation is not billed), so ``cached_tokens <= prompt_tokens`` always holds.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.llm.tokens import TokenCounter

MIN_CACHED_TOKENS = 1024  # OpenAI caches nothing for a shorter prompt
CACHE_STEP = 128  # cache hits come in whole blocks of this many tokens
DEFAULT_ENTRIES = 256
DEFAULT_TTL = 600.0  # seconds; OpenAI keeps prefixes 5-10 minutes after their last use
# Routing key: prompts that differ within these characters share fewer than 1,024 tokens (a
# token is at least one character), so only prompts with the same head need comparing.
_HEAD_CHARS = MIN_CACHED_TOKENS
_CHUNK = 4096  # characters compared at a time (string slices compare at C speed)


def canonical_prompt(body: Mapping[str, Any]) -> str:
    """Tools then messages as one stable string: what a provider's cache would see."""

    def dump(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    return dump(body.get("tools") or []) + dump(body.get("messages") or [])


def common_prefix_length(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (chunked, then a binary search)."""
    limit = min(len(a), len(b))
    start = 0
    while start < limit:
        end = min(start + _CHUNK, limit)
        if a[start:end] != b[start:end]:
            low, high = start, end  # a[:low] matches; a[:high] does not
            while high - low > 1:
                middle = (low + high) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    high = middle
            return low
        start = end
    return limit


@dataclass(frozen=True, slots=True)
class _Bucket:
    """Which requests may share a cache: same model, same cache key, same head."""

    model: str
    cache_key: str | None
    head: str


class PromptCache:
    """Recent prompts in a bounded LRU with a TTL, so memory stays flat over long runs.

    ``clock`` is injectable so a test can age entries without sleeping.
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_ENTRIES,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.ttl = ttl
        self.clock = clock
        # (bucket, prompt) -> last use; the same prompt under another key is another entry
        self._entries: OrderedDict[tuple[_Bucket, str], float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def cached_tokens(
        self, body: Mapping[str, Any], prompt_tokens: int, counter: TokenCounter
    ) -> int:
        """The ``cached_tokens`` to report for this request, then remember its prompt."""
        if prompt_tokens < MIN_CACHED_TOKENS:
            return 0
        prompt = canonical_prompt(body)
        if len(prompt) < _HEAD_CHARS:
            return 0
        key = body.get("prompt_cache_key")
        bucket = _Bucket(
            str(body.get("model")), key if isinstance(key, str) else None, prompt[:_HEAD_CHARS]
        )
        now = self.clock()
        self._expire(now)
        held = (old for held_in, old in self._entries if held_in == bucket)
        shared = max((common_prefix_length(prompt, old) for old in held), default=0)
        self._remember(prompt, bucket, now)
        if shared < _HEAD_CHARS:
            return 0
        whole = counter.count_text(prompt)
        part = whole if shared == len(prompt) else counter.count_text(prompt[:shared])
        scaled = min(prompt_tokens, part * prompt_tokens // max(whole, 1))
        if scaled < MIN_CACHED_TOKENS:
            return 0
        return scaled - scaled % CACHE_STEP

    def _remember(self, prompt: str, bucket: _Bucket, now: float) -> None:
        self._entries.pop((bucket, prompt), None)
        self._entries[bucket, prompt] = now
        while len(self._entries) > max(self.max_entries, 0):
            self._entries.popitem(last=False)

    def _expire(self, now: float) -> None:
        """Drop entries unused for ``ttl`` seconds (the oldest come first in the LRU)."""
        while self._entries:
            oldest, used = next(iter(self._entries.items()))
            if now - used < self.ttl:
                return
            del self._entries[oldest]
