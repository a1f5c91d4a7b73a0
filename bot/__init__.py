"""Parlour: LLM chat bots for group chats. What plugin and adapter authors use lives here.

The names below load on first use (PEP 562), so ``import bot`` and ``from bot.plugins import
tool`` stay light: no database, LLM or scheduler library is imported until a name that needs one
is touched (``bot.App``, ``bot.ChatService``, ...). ``tests/product/app/test_import_cost.py``
guards it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from bot.app import App
    from bot.config import Settings, load_settings, settings_from_mapping
    from bot.context import ChatContext, ChatType, Scope
    from bot.conversation.commands import Commands
    from bot.conversation.service import (
        ChatEvent,
        ChatService,
        Done,
        Reply,
        ToolFinished,
        ToolStarted,
    )
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
    from bot.llm.client import TextDelta, ToolCall
    from bot.llm.trim import trim_history
    from bot.memory.provider import MemoryProvider
    from bot.platform.adapter import Adapter
    from bot.plugins.commands import CommandResult

# exported name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "Adapter": "bot.platform.adapter",
    "App": "bot.app",
    "ChatContext": "bot.context",
    "ChatEvent": "bot.conversation.service",
    "ChatService": "bot.conversation.service",
    "ChatType": "bot.context",
    "CommandResult": "bot.plugins.commands",
    "Commands": "bot.conversation.commands",
    "ConfigError": "bot.errors",
    "ContextTooLongError": "bot.errors",
    "Done": "bot.conversation.service",
    "LLMAuthError": "bot.errors",
    "LLMBusyError": "bot.errors",
    "LLMError": "bot.errors",
    "LLMQuotaError": "bot.errors",
    "LLMUnavailableError": "bot.errors",
    "MemoryProvider": "bot.memory.provider",
    "ParlourError": "bot.errors",
    "Reply": "bot.conversation.service",
    "Scope": "bot.context",
    "Settings": "bot.config",
    "TextDelta": "bot.llm.client",
    "ToolCall": "bot.llm.client",
    "ToolFinished": "bot.conversation.service",
    "ToolRunner": "bot.conversation.tool_runner",
    "ToolStarted": "bot.conversation.service",
    "UserFacingError": "bot.errors",
    "load_settings": "bot.config",
    "settings_from_mapping": "bot.config",
    "trim_history": "bot.llm.trim",
}

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
