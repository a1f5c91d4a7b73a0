"""Parlour: LLM chat bots for group chats. What plugin and adapter authors use lives here."""

from bot.adapter import Adapter
from bot.app import App
from bot.config import Settings, load_settings, settings_from_mapping
from bot.context import ChatContext, ChatType, Scope
from bot.conversation.commands import CommandResult, Commands
from bot.conversation.service import ChatEvent, ChatService, Done, Reply, ToolFinished, ToolStarted
from bot.conversation.tool_runner import ToolRunner
from bot.errors import (
    ConfigError,
    ContextTooLongError,
    LLMAuthError,
    LLMBusyError,
    LLMError,
    LLMQuotaError,
    LLMUnavailableError,
    ParlourError,
    UserFacingError,
)
from bot.history import trim_history
from bot.llm.client import TextDelta, ToolCall
from bot.memory.provider import MemoryProvider

__all__ = [
    "Adapter",
    "App",
    "ChatContext",
    "ChatEvent",
    "ChatService",
    "ChatType",
    "CommandResult",
    "Commands",
    "ConfigError",
    "ContextTooLongError",
    "Done",
    "LLMAuthError",
    "LLMBusyError",
    "LLMError",
    "LLMQuotaError",
    "LLMUnavailableError",
    "MemoryProvider",
    "ParlourError",
    "Reply",
    "Scope",
    "Settings",
    "TextDelta",
    "ToolCall",
    "ToolFinished",
    "ToolRunner",
    "ToolStarted",
    "UserFacingError",
    "load_settings",
    "settings_from_mapping",
    "trim_history",
]
