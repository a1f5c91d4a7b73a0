"""``tools:``: how far the model may go with tool calls in one answer."""

from __future__ import annotations

from pydantic import Field

from bot.config.base import Section


class ToolsSettings(Section):
    max_rounds: int = Field(
        5,
        ge=0,
        le=50,
        description=(
            "tool-call rounds per answer; from then on tools are still described but the model"
            " must answer in text (0: never run a tool)"
        ),
    )
