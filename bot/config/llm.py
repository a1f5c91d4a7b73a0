"""``llm:``: the model endpoint, its fallbacks and the one retry layer."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from bot.config.base import Section, env_secret
from bot.errors import ConfigError

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
MB = 1024 * 1024


class RetrySettings(Section):
    """The one retry layer around every LLM call (the SDK's own retries are off)."""

    max_attempts: int = Field(4, ge=1, le=10, description="for errors, timeouts, 5xx")
    max_rate_limited_attempts: int = Field(
        10,
        ge=1,
        le=50,
        description="for 429s: the server said when to come back (within max_total_wait)",
    )
    base_delay: float = Field(
        0.5, ge=0, description="seconds before the first retry; doubles, jittered"
    )
    max_delay: float = Field(8.0, ge=0, description="longest sleep between two attempts")
    max_total_wait: float = Field(30.0, ge=0, description="cap on all sleeps of one call")


class EndpointSettings(Section):
    """One OpenAI-compatible endpoint (the primary, or a fallback)."""

    base_url: str = Field(
        default_factory=lambda: os.environ.get("OPENAI_BASE_URL") or "",
        validate_default=True,
        description="any OpenAI-compatible /v1 endpoint (Ollama, vLLM, LM Studio, DeepSeek, ...)",
        json_schema_extra={"shown_default": "`$OPENAI_BASE_URL`, else https://api.openai.com/v1"},
    )
    api_key: SecretStr | None = Field(
        None, description="this endpoint's key (a fallback never borrows the primary's)"
    )
    model: str = Field("gpt-4o-mini", description="model name as the server knows it")
    prompt_cache_key: bool | None = Field(
        None,
        description="send OpenAI's prompt_cache_key (a keyed hash of the conversation, never its "
        "ids) so one conversation's requests reach the same prompt cache; null or auto: only "
        "to api.openai.com, true/false: force it for a compatible server",
        json_schema_extra={"shown_default": "`null` (on for api.openai.com)"},
    )

    @field_validator("prompt_cache_key", mode="before")
    @classmethod
    def _auto(cls, value: object) -> object:
        return None if isinstance(value, str) and value.strip().lower() == "auto" else value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip()
        if value and not re.match(r"^https?://", value):
            raise ValueError("must start with http:// or https://")
        if urlsplit(value).password is not None:
            raise ValueError("must not contain credentials; put the key in api_key")
        return value.rstrip("/")

    @property
    def effective_base_url(self) -> str:
        return self.base_url or OPENAI_DEFAULT_BASE_URL

    @property
    def sends_cache_key(self) -> bool:
        """Whether requests carry ``prompt_cache_key``: as configured, else only to OpenAI
        itself (other servers may refuse a parameter they do not know)."""
        if self.prompt_cache_key is not None:
            return self.prompt_cache_key
        return urlsplit(self.effective_base_url).hostname == "api.openai.com"

    @property
    def needs_key(self) -> bool:
        """OpenAI itself needs a key; local servers (Ollama, vLLM, the test kit) usually don't."""
        return "api.openai.com" in self.effective_base_url


class FallbackSettings(EndpointSettings):
    """A fallback endpoint: often a smaller local model, so it has its own window and reply
    reserve (its tokenizer follows its ``model``, as the primary's does)."""

    context_window: int | None = Field(
        None,
        ge=256,
        description="tokens this model accepts (prompt + reply); a request is re-trimmed to it",
        json_schema_extra={"shown_default": "`llm.context_window`"},
    )
    max_output_tokens: int | None = Field(
        None,
        ge=1,
        description="tokens reserved for the reply on this endpoint",
        json_schema_extra={"shown_default": "`llm.max_output_tokens`"},
    )


class LLMSettings(EndpointSettings):
    api_key: SecretStr | None = Field(
        default_factory=lambda: env_secret("OPENAI_API_KEY"),
        description="needed only for api.openai.com; keep it in the environment",
        json_schema_extra={"shown_default": "`$OPENAI_API_KEY`"},
    )
    context_window: int = Field(
        128_000,
        ge=256,
        description="tokens the model accepts (prompt + reply); set it to the real one",
    )
    max_output_tokens: int = Field(1024, ge=1, description="tokens reserved for the reply")
    temperature: float | None = Field(
        0.7, ge=0, le=2, description="sampling temperature; null: left out of requests"
    )
    timeout: float = Field(60.0, gt=0, description="seconds for one HTTP attempt")
    deadline: float = Field(
        120.0,
        gt=0,
        description="seconds until the model must have started answering, all retries and "
        "fallbacks included; then the user is told",
    )
    circuit_breaker: float = Field(
        15.0,
        ge=0,
        description="after an endpoint failed for good (down, not busy), seconds it is skipped: "
        "fallbacks answer, or users are told at once (0: off)",
    )
    retry: RetrySettings = RetrySettings()
    vision: bool = Field(
        False,
        description="send images to the model (it must be a vision model); off: the bot says "
        "it cannot see images",
    )
    max_image_bytes: int = Field(
        5 * MB,
        ge=1024,
        le=20 * MB,
        description="largest image sent, in bytes (as base64 it grows by a third; OpenAI takes "
        "at most 20 MB per image, and a photo needs far less to be read)",
        json_schema_extra={"shown_default": "`5242880` (5 MB)"},
    )
    max_images: int = Field(4, ge=1, le=10, description="most images answered in one message")
    transcription_model: str | None = Field(
        None,
        description="model that transcribes voice messages at the endpoint's "
        "/audio/transcriptions (e.g. whisper-1, gpt-4o-mini-transcribe); null: voice is off",
    )
    max_audio_bytes: int = Field(
        25 * MB,
        ge=1024,
        le=25 * MB,
        description="largest voice message transcribed, in bytes (OpenAI's endpoint refuses "
        "more than 25 MB)",
        json_schema_extra={"shown_default": "`26214400` (25 MB)"},
    )
    fallbacks: tuple[FallbackSettings, ...] = Field(
        (), description="other endpoints tried in order when the primary gives up"
    )

    @field_validator("transcription_model", mode="before")
    @classmethod
    def _blank_is_off(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _reserve_fits(self) -> LLMSettings:
        if self.max_output_tokens >= self.context_window:
            raise ValueError("max_output_tokens must be smaller than context_window")
        for index, fallback in enumerate(self.fallbacks):
            window, reserve = self.limits_of(fallback)
            if reserve >= window:
                raise ValueError(
                    f"fallbacks[{index}]: max_output_tokens ({reserve}) must be smaller than "
                    f"its context_window ({window})"
                )
        return self

    def check_key(self) -> None:
        """Fail early, in one sentence, when the model cannot possibly be reached."""
        if self.needs_key and self.api_key is None:
            raise ConfigError(
                f"no LLM API key for {self.effective_base_url}",
                fix="set OPENAI_API_KEY, or set OPENAI_BASE_URL to an OpenAI-compatible "
                "server (Ollama, vLLM, ...) that needs none",
            )

    def limits_of(self, endpoint: EndpointSettings) -> tuple[int, int]:
        """``(context_window, max_output_tokens)`` of ``endpoint``: a fallback's own, else the
        primary's."""
        window, reserve = self.context_window, self.max_output_tokens
        if isinstance(endpoint, FallbackSettings):
            window = endpoint.context_window or window
            reserve = endpoint.max_output_tokens or reserve
        return window, reserve
