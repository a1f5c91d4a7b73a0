"""``catchup:``: ``/catchup`` digests of what a group said, and what one may cost."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from bot.config.base import Section

__all__ = ["CatchupSettings"]


class CatchupSettings(Section):
    enabled: bool = Field(
        True, description="offer /catchup in groups (and the admin API's catch-up route)"
    )
    max_messages: int = Field(
        1000, ge=1, le=5000, description="most messages one catch-up reads (/catchup N: up to this)"
    )
    max_hours: float = Field(
        72.0, gt=0, le=24 * 30, description="furthest back /catchup Nh reaches, in hours"
    )
    max_input_tokens: int = Field(
        24_000,
        ge=500,
        description="the group's words one catch-up reads at most, in tokens; a longer span"
        " keeps its newest messages and says how many were left out",
    )
    chunk_tokens: int = Field(
        3000,
        ge=200,
        description="the group's words in one model call, in tokens: a longer span is"
        " summarised in steps of this size, then the summaries are merged (map-reduce)",
    )
    max_output_tokens: int = Field(
        400, ge=32, le=4000, description="longest summary one model call may write, in tokens"
    )
    model: str | None = Field(
        None,
        description="the model catch-ups ask (a smaller, cheaper one will do); default: the"
        " chat's model",
    )

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("name a model, or leave catchup.model out to use the chat's")
        return value.strip() if value is not None else None

    @model_validator(mode="after")
    def _chunks_fit(self) -> CatchupSettings:
        if self.chunk_tokens > self.max_input_tokens:
            raise ValueError("chunk_tokens must not be larger than max_input_tokens")
        if self.chunk_tokens < 3 * self.max_output_tokens:
            # a merging step must take at least three summaries, or merging never ends
            raise ValueError("chunk_tokens must be at least 3 x max_output_tokens")
        return self
