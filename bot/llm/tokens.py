"""Prompt token counting that works offline.

OpenAI models are counted exactly with tiktoken plus the chat framing from OpenAI's
cookbook, its vocabularies read from a cache seeded without the network
(:mod:`bot.llm.tiktoken_files`). Other models are approximated
with o200k_base and calibrated against the ``usage.prompt_tokens`` the API reports; with
no tokenizer at all we fall back to a conservative character-class estimate.

A counter loads its encoding when it first counts, not when it is made: an encoding holds
about 75 MiB and takes a few hundred milliseconds to build, which a bot that has not been
spoken to yet (and its start-up) need not pay (issue 31). tiktoken itself is imported then too.
Code on the event loop calls :meth:`TokenCounter.load` in a thread first, so those hundreds of
milliseconds never block it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import logging
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache

from bot.llm.tiktoken_files import ENCODING_FILES, seed
from bot.platform.media import BASE_IMAGE_TOKENS, UNKNOWN_IMAGE_TOKENS, image_size, image_tokens

if TYPE_CHECKING:
    from tiktoken import Encoding

log = logging.getLogger(__name__)

# For names tiktoken does not know yet; o200k first so "gpt-4.1-x" does not match "gpt-4".
_OPENAI_PREFIXES = {
    "o200k_base": ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4"),
    "cl100k_base": ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada"),
}
PER_MESSAGE = 3  # start/separator/end tokens framing every message (cookbook)
PER_NAME = 1  # a `name` field costs one more token (cookbook)
REPLY_PRIMING = 3  # every request ends with the primed assistant header (cookbook)
PER_TOOL_CALL = 6  # framing around each tool call's name + arguments; a guess that errs high
_IMAGE_PARTS = frozenset({"image_url", "input_image", "image"})
_IMAGE_HEAD_CHARS = 1 << 18  # base64 read for an image's size: 192 KiB, past any EXIF block

# Calibration of non-exact counters: an EMA of actual/raw that rises fast and falls slowly,
# because undercounting overflows the context window while overcounting only wastes a bit
# of it.  During the first _WARMUP observations the ratio may not drop below 1.0.
_ALPHA_UP, _ALPHA_DOWN, _WARMUP, _MIN_RATIO, _MAX_RATIO = 0.3, 0.1, 3, 0.5, 4.0
_TEXT_CACHE_SIZE = 16_384  # distinct texts remembered per counter (~100 windows of 100 messages)
# Texts longer than this are remembered by a 128-bit digest instead (a collision is no risk), so
# the caches' memory is bounded (~7 MiB at most) however long the messages are.
_KEPT_TEXT_CHARS = 128
# A long text's digest costs more than its lookup (0.7 us for 500 characters): the long texts
# counted last are kept as they are too, up to this many characters (found by their str hash).
_RECENT_LONG_CHARS = 2**20

_WIDE = re.compile("[\u0800-\uffff]")  # 3 UTF-8 bytes: CJK, kana, Hangul, Indic, Thai...
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # 4 UTF-8 bytes: emoji, rare CJK
# ASCII split like tiktoken's pre-tokens, each costing at least one token; letter runs
# are cut every 4 chars because rare words and identifiers take several tokens.
_PIECES = re.compile(r" ?[A-Za-z]{1,4}|[0-9]{1,3}| ?[!-/:-@[-`{-~]|\s+(?!\S)|\s")

_LOCK = threading.RLock()
_ENCODINGS: dict[str, Encoding | None] = {}
_COUNTERS: dict[str, TokenCounter] = {}
_warned = False


def _tiktoken() -> ModuleType | None:
    """tiktoken, imported on first use; None when it cannot be (its Rust wheel does not load
    everywhere: we estimate then)."""
    try:
        import tiktoken
    except ImportError:
        return None
    return tiktoken


def estimate_tokens(text: str) -> int:
    """Overcounting guess for when no tokenizer is available.

    ASCII costs a token per 3 chars (real text averages ~4) or per 4-letter piece if that
    is more, so numbers, code and identifiers are not undercounted; other 2-byte chars
    cost 1, CJK, kana, Hangul and other 3-byte chars 2 (most are one token, but rarer ones such
    as ぬ or ヲ take two in o200k_base, and a fallback must not undercount), emoji and other
    4-byte chars 3.
    """
    if not text:
        return 0
    astral = len(_ASTRAL.findall(text))
    wide = len(_WIDE.findall(text))
    ascii_chars = len(text.encode("ascii", "ignore"))
    narrow = len(text) - ascii_chars - wide - astral
    ascii_cost = max(ascii_chars / 3, sum(1 for _ in _PIECES.finditer(text)))
    return math.ceil(ascii_cost + narrow + 2 * wide + 3 * astral)


def _warn_once(reason: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning("token counts are conservative estimates, not exact: %s", reason)


def _encoding(name: str) -> Encoding | None:
    """Load `name` once per process; tiktoken is only asked once the cache is seeded."""
    with _LOCK:
        if name not in _ENCODINGS:
            enc, reason = None, seed(name)
            tiktoken = _tiktoken() if reason is None else None
            if reason is None and tiktoken is None:
                reason = "tiktoken cannot be imported"
            elif reason is None and tiktoken is not None:
                try:
                    enc = tiktoken.get_encoding(name)
                except Exception as exc:
                    reason = f"tiktoken could not load {name}: {exc!r}"
            if reason is not None:
                _warn_once(reason)
            _ENCODINGS[name] = enc
        return _ENCODINGS[name]


def _openai_encoding(model: str) -> str | None:
    """The encoding OpenAI counts `model` with, or None if it is not an OpenAI chat model."""
    name = model.strip().lower().removeprefix("openai/")
    tiktoken = _tiktoken()
    try:
        known = tiktoken.encoding_name_for_model(name) if tiktoken else None
    except KeyError:
        known = None
    if known is not None:  # gpt-oss (harmony) and legacy encodings are not exact here
        return known if known in ENCODING_FILES else None
    for encoding, prefixes in _OPENAI_PREFIXES.items():
        for prefix in prefixes:  # "o1" and "o1-mini" match "o1"; "o1x" does not
            if name.startswith(prefix) and not name[len(prefix) : len(prefix) + 1].isalnum():
                return encoding
    return None


class TokenCounter:
    """Counts chat prompts for one model: exact for OpenAI, calibrated otherwise. Its encoding
    is loaded when it first counts (or is asked which it is)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._loaded: tuple[Encoding | None, bool] | None = None  # (encoding, exact)
        self._ratio = 1.0
        self._samples = 0
        # Every turn re-counts the same history window; remembering recent texts makes a
        # 100-message window cost dictionary lookups instead of BPE runs (bench/).
        self._cached_count = functools.lru_cache(maxsize=_TEXT_CACHE_SIZE)(self._count_uncached)
        self._long_counts: LRUCache[bytes, int] = LRUCache(maxsize=_TEXT_CACHE_SIZE)
        self._recent_long: OrderedDict[str, int] = OrderedDict()  # bounded by _RECENT_LONG_CHARS
        self._recent_chars = 0
        self._long_lock = threading.Lock()  # counters are shared by every thread of the process

    def _load(self) -> tuple[Encoding | None, bool]:
        """The encoding and whether it is exact for this model, resolved once."""
        loaded = self._loaded
        if loaded is None:
            openai = _openai_encoding(self.model)
            enc = _encoding(openai or "o200k_base")
            loaded = self._loaded = (enc, openai is not None and enc is not None)
        return loaded

    def load(self) -> None:
        """Load the encoding now rather than at the first count: 0.5-0.7 s the first time in a
        process, so code on the event loop runs it in a thread (``asyncio.to_thread``)."""
        self._load()

    @property
    def loaded(self) -> bool:
        """Whether counting may start without loading the encoding first."""
        return self._loaded is not None

    @property
    def exact(self) -> bool:
        return self._load()[1]

    @property
    def encoding_name(self) -> str | None:
        enc = self._load()[0]
        return None if enc is None else enc.name

    @property
    def ratio(self) -> float:
        return self._ratio

    def count_text(self, text: str) -> int:
        """Tokens of plain text; special-token markup counts as ordinary text, as sent."""
        if not text:
            return 0
        if len(text) <= _KEPT_TEXT_CHARS:
            return self._cached_count(text)
        recent = self._recent_long
        with self._long_lock:
            found = recent.get(text)
            if found is not None:
                recent.move_to_end(text)
                return found
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._long_lock:
            found = self._long_counts.get(digest)
        if found is None:
            found = self._count_uncached(text)
        with self._long_lock:
            self._long_counts[digest] = found
            if text not in recent and len(text) <= _RECENT_LONG_CHARS // 16:
                recent[text] = found
                self._recent_chars += len(text)
                while self._recent_chars > _RECENT_LONG_CHARS:
                    oldest, _ = recent.popitem(last=False)
                    self._recent_chars -= len(oldest)
        return found

    def _count_uncached(self, text: str) -> int:
        enc = self._load()[0]
        if enc is None:
            return estimate_tokens(text)
        return len(enc.encode_ordinary(text))

    def _str(self, value: Any) -> int:
        return self.count_text(value) if isinstance(value, str) else 0

    def _count_call(self, function: Any) -> int:
        if not isinstance(function, Mapping):
            return 0
        return (
            PER_TOOL_CALL + self._str(function.get("name")) + self._str(function.get("arguments"))
        )

    def _count_content(self, content: Any) -> int:
        if isinstance(content, str) or not isinstance(content, Sequence):
            return self._str(content)
        total = 0
        for part in content:
            if isinstance(part, Mapping):
                total += image_part_tokens(part) if part.get("type") in _IMAGE_PARTS else 0
                total += self._str(part.get("text")) + self._str(part.get("refusal"))
        return total

    def count_message(self, message: Mapping[str, Any]) -> int:
        """One message with its framing; like the cookbook, every string value counts."""
        if len(message) == 2:  # the common {"role", "content": str} message, counted per turn
            role, content = message.get("role"), message.get("content")
            if isinstance(role, str) and isinstance(content, str):
                if len(role) <= _KEPT_TEXT_CHARS and len(content) <= _KEPT_TEXT_CHARS:
                    cached = self._cached_count  # count_text's short path, one call less each
                    return PER_MESSAGE + cached(role) + cached(content)
                return PER_MESSAGE + self.count_text(role) + self.count_text(content)
        total = PER_MESSAGE
        for key, value in message.items():
            if key == "content":
                total += self._count_content(value)
            elif key == "tool_calls" and isinstance(value, Sequence):
                calls = (c.get("function") for c in value if isinstance(c, Mapping))
                total += sum(map(self._count_call, calls))
            elif key == "function_call":  # the pre-tools API
                total += self._count_call(value)
            elif isinstance(value, str):
                total += self.count_text(value) + (PER_NAME if key == "name" else 0)
        return total

    def count_messages(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """The whole prompt incl. reply priming, scaled by the calibration ratio."""
        return self.scaled(sum(map(self.count_message, messages)))

    def scaled(self, raw: int) -> int:
        """``count_messages`` of messages whose :meth:`count_message` sum to ``raw``: those sums
        add up exactly, so parts counted apart make the whole's count (the scaling may not)."""
        raw += REPLY_PRIMING
        return raw if self._ratio == 1.0 else math.ceil(raw * self._ratio)

    def observe(self, estimated: int, actual: int) -> None:
        """Learn from usage; `estimated` is what count_messages returned for that request."""
        if estimated <= 0 or actual <= 0:
            return
        self._samples += 1
        if self.exact:
            return  # tiktoken is ground truth; any gap is input we do not see (tools etc.)
        target = self._ratio * actual / estimated
        alpha = _ALPHA_UP if target > self._ratio else _ALPHA_DOWN
        floor = 1.0 if self._samples <= _WARMUP else _MIN_RATIO
        moved = self._ratio + alpha * (target - self._ratio)
        self._ratio = min(_MAX_RATIO, max(floor, moved))


def image_part_tokens(part: Mapping[str, Any]) -> int:
    """An image content part by OpenAI's tile rule (``bot.platform.media.image_tokens``): 85 at low
    detail; else from the size in a ``data:`` URL's image header, or the rule's worst case
    when the size cannot be known (a link)."""
    image = part.get("image_url")
    if not isinstance(image, Mapping):
        return UNKNOWN_IMAGE_TOKENS
    if image.get("detail") == "low":
        return BASE_IMAGE_TOKENS
    url = image.get("url")
    return _data_url_tokens(url) if isinstance(url, str) else UNKNOWN_IMAGE_TOKENS


@functools.lru_cache(maxsize=64)  # a prompt is counted several times per turn
def _data_url_tokens(url: str) -> int:
    start = url.find(";base64,")
    if not url.startswith("data:") or start < 0:
        return UNKNOWN_IMAGE_TOKENS
    head = url[start + 8 : start + 8 + _IMAGE_HEAD_CHARS]
    try:
        size = image_size(base64.b64decode(head[: len(head) // 4 * 4], validate=True))
    except (binascii.Error, ValueError):
        size = None
    return image_tokens(*size) if size else UNKNOWN_IMAGE_TOKENS


def get_counter(model: str) -> TokenCounter:
    """One shared counter per model name, so calibration accumulates across requests."""
    with _LOCK:
        if model not in _COUNTERS:
            _COUNTERS[model] = TokenCounter(model)
        return _COUNTERS[model]


def default_count_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Count with gpt-4o's tokenizer: a sensible default when the model is unknown."""
    return get_counter("gpt-4o").count_messages(messages)
