"""``knowledge:``: the knowledge bases a deployment keeps, and how documents are cut."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from bot.config.base import Section

__all__ = ["KnowledgeBaseSettings", "KnowledgeSettings"]

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


class KnowledgeBaseSettings(Section):
    description: str = Field("", max_length=500, description="what the base holds (for admins)")
    shared: bool = Field(
        False,
        description="any chat's admin may bind it with /knowledge bind (otherwise only bot"
        " admins, and chats: presets)",
    )
    chat_uploads: bool = Field(
        False,
        description="admins of the chats a chats: preset binds it to may add documents to it"
        " from the chat (bot admins always may; never a chat that bound it by command)",
    )


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
    max_tokens: int = Field(
        1000,
        ge=0,
        description="passages retrieved for a message before the model is called, in tokens"
        " (0: none, the search_knowledge tool still works; at most an eighth of the prompt's room)",
    )
    tool: bool = Field(True, description="offer the search_knowledge tool where a base is bound")
    top_k: int = Field(8, ge=1, le=50, description="passages a search brings back at most")
    citations: Literal["cited", "retrieved", "off"] = Field(
        "cited",
        description="the sources line under an answer: the passages it cites ([1]), every"
        " passage it was given, or none",
    )

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
