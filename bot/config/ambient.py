"""``ambient:``: how the bot answers group messages not addressed to it, where ambient mode is on.

Ambient mode is off by default; a ``chats:`` preset turns it on (``ambient: true``) and an admin
turns it on or off in the chat (``/ambient on|off``). These keys say what counts as "clearly
meant for the bot", what it may cost and when it stays quiet
(:mod:`bot.conversation.ambient`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from bot.config.base import Section

__all__ = ["DEFAULT_QUESTION_WORDS", "DEFAULT_STOP_PHRASES", "AmbientSettings"]

DEFAULT_STOP_PHRASES = (
    "stop",
    "shut up",
    "be quiet",
    "quiet",
    "hush",
    "go away",
    "enough",
    "not you",
    "nobody asked",
    "stfu",
)
DEFAULT_QUESTION_WORDS = (
    "what",
    "when",
    "where",
    "who",
    "whom",
    "whose",
    "which",
    "why",
    "how",
    "is",
    "are",
    "am",
    "was",
    "were",
    "do",
    "does",
    "did",
    "can",
    "could",
    "will",
    "would",
    "shall",
    "should",
    "may",
    "might",
    "have",
    "has",
)


class AmbientSettings(Section):
    names: tuple[str, ...] = Field(
        (),
        description="more names the bot answers to without an @ (its display name and username"
        " on each platform always count)",
    )
    max_per_hour: int = Field(
        6, ge=0, le=1000, description="unprompted answers per chat in any hour (0: none)"
    )
    cooldown: float = Field(
        1800.0, ge=0, description="seconds without unprompted answers after someone says stop"
    )
    follow_up: float = Field(
        180.0,
        ge=0,
        description="seconds after the bot answered someone in which their question (or a"
        " reply to that exchange) is taken as meant for it",
    )
    stop_phrases: tuple[str, ...] = Field(
        DEFAULT_STOP_PHRASES,
        description="words that tell the bot to stop (whole words, any case); replaces the"
        " English defaults: add your group's languages",
    )
    question_words: tuple[str, ...] = Field(
        DEFAULT_QUESTION_WORDS,
        description="first words that make a message a question without a question mark;"
        " replaces the English defaults",
    )
    classifier_model: str | None = Field(
        None,
        description="a small model asked yes or no before each unprompted answer (on the"
        " primary endpoint; its tokens are the bot's own); unset: the rules decide alone",
    )
    classifier_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="the classifier's probability of yes needed to answer"
    )
    classifier_timeout: float = Field(
        10.0, gt=0, le=120, description="seconds the classifier may take; later counts as no"
    )

    @field_validator("names", "stop_phrases", "question_words", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = (value,)
        if isinstance(value, list | tuple):
            words = tuple(" ".join(str(v).split()) for v in value)
            if not all(words):
                raise ValueError("an entry is empty")
            return words
        return value

    @field_validator("classifier_model")
    @classmethod
    def _model_named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("name a model, or leave classifier_model out")
        return value.strip() if value is not None else None
