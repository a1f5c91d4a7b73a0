"""What every embedder shares: the roles a text is embedded in, and unit vectors (stored that
way, so cosine is a plain dot product). Its own module so the server and the local embedder
both import it and neither imports the other."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from bot.errors import LLMUnavailableError

__all__ = ["Role", "normalized"]

Role = Literal["query", "passage"]  # a search's question, or a text stored to be found


def normalized(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise LLMUnavailableError("the embeddings endpoint returned a zero or invalid vector")
    return [x / norm for x in vector]
