"""``knowledge:``: the knowledge bases a deployment keeps, and how documents are cut."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from bot.config.base import Section

__all__ = ["KnowledgeBaseSettings", "KnowledgeSettings"]

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


class KnowledgeBaseSettings(Section):
    description: str = Field("", max_length=500, description="what the base holds (for admins)")


class KnowledgeSettings(Section):
    bases: dict[str, KnowledgeBaseSettings] = Field(
        default_factory=dict,
        description="knowledge bases by name (lower-case letters, digits, - and _)",
    )
    chunk_tokens: int = Field(300, ge=32, le=4000, description="most tokens in a chunk")
    chunk_overlap: int = Field(
        40, ge=0, le=1000, description="tokens a chunk repeats from the one before it"
    )
    max_file_bytes: int = Field(25_000_000, ge=1, description="largest document accepted, in bytes")

    @field_validator("bases")
    @classmethod
    def _names(cls, bases: dict[str, KnowledgeBaseSettings]) -> dict[str, KnowledgeBaseSettings]:
        for name in bases:
            if not _NAME.fullmatch(name):
                raise ValueError(
                    f"base name {name!r}: use 1-64 lower-case letters, digits, - and _"
                )
        return bases

    @model_validator(mode="after")
    def _overlap(self) -> KnowledgeSettings:
        if self.chunk_overlap >= self.chunk_tokens:
            raise ValueError("chunk_overlap must be smaller than chunk_tokens")
        return self
