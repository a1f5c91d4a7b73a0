"""``memory:``: recall, summaries and the optional embeddings."""

from __future__ import annotations

from pydantic import Field, SecretStr, ValidationError, field_validator

from bot.config.base import Section
from bot.config.llm import EndpointSettings


class EmbeddingSettings(Section):
    """Optional vectors for memory recall (``memory.embeddings``); off unless ``model`` is set.

    ``base_url`` defaults to ``llm.base_url``. ``api_key`` defaults to ``llm.api_key`` only
    while both talk to the same host: the chat provider's key is never sent to another server.
    """

    model: str | None = Field(
        None, description="embedding model (facts and old messages); none: recall uses FTS only"
    )
    base_url: str | None = Field(None, description="OpenAI-compatible server; default: llm's")
    api_key: SecretStr | None = Field(
        None, description="default: llm.api_key, but only while base_url is on the same host"
    )
    batch_size: int = Field(64, ge=1, le=2048, description="texts per /embeddings request")
    min_similarity: float = Field(
        0.3, ge=-1, le=1, description="cosine below which nothing is recalled by meaning"
    )

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        return (value or "").strip() or None  # "${EMBEDDING_MODEL:-}" switches it off

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if not value or not value.strip():
            return None
        try:  # the same rules as every other endpoint's URL
            return EndpointSettings(base_url=value).base_url
        except ValidationError:
            raise ValueError(
                "must start with http:// or https:// and hold no credentials"
            ) from None


class MemorySettings(Section):
    enabled: bool = Field(True, description="recall stored memories and old messages")
    top_k: int = Field(
        20, ge=1, le=200, description="most facts (and old messages) recalled per request"
    )
    max_tokens: int = Field(
        1100,
        ge=0,
        description=(
            "cap on recalled lines in a request (those kept in the window included): the best"
            " until it is used"
        ),
    )
    recall_history: bool = Field(
        True, description="also search this conversation's messages older than the window"
    )
    min_relevance: float = Field(
        0.0,
        ge=0,
        le=1,
        description=(
            "old messages scoring under this share of the best match are not recalled (they"
            " share only common words with the message); 0: every match, up to max_tokens"
        ),
    )
    neighbours: bool = Field(
        True,
        description=(
            "a recalled old message brings the messages said right after and right before it,"
            " while max_tokens allows (an answer often follows the message that matched)"
        ),
    )
    share_private: bool = Field(
        False, description="recall a user's private-chat memories for them in groups too"
    )
    embeddings: EmbeddingSettings = EmbeddingSettings()
    summarize: bool = Field(
        False, description="summarise turns that left the window (an extra LLM call, background)"
    )
    summary_model: str | None = Field(None, description="model for summaries; default llm.model")
    summary_every: int = Field(10, ge=1, description="compact at most once per this many turns")
    summary_max_words: int = Field(200, ge=20, le=2000, description="length of the summary")
    extract_facts: bool = Field(True, description="store facts the summary names as memories")
