"""One owner of the lifecycle: ``async with App(settings)`` opens the store, the LLM client and
the service, and closes them in reverse order. Adapters receive the running app.
"""

from __future__ import annotations

import logging
from types import TracebackType

from bot.commands import Commands
from bot.config import Settings, safe_url
from bot.errors import ConfigError
from bot.history.sqlite import SQLiteStore
from bot.llm.client import LLMClient
from bot.llm.retry import Sleep
from bot.memory import MemoryProvider
from bot.service import ChatService
from bot.tools import ToolRunner

log = logging.getLogger(__name__)


def check_llm_settings(settings: Settings) -> None:
    """Fail early, in one sentence, when the model cannot possibly be reached."""
    if settings.llm.needs_key and settings.llm.api_key is None:
        raise ConfigError(
            "No LLM API key: set OPENAI_API_KEY, or set OPENAI_BASE_URL to an "
            "OpenAI-compatible server (Ollama, vLLM, ...) that needs none."
        )


class App:
    def __init__(
        self,
        settings: Settings,
        *,
        memory: MemoryProvider | None = None,
        tools: ToolRunner | None = None,
        retry_sleep: Sleep | None = None,
    ) -> None:
        self.settings = settings
        self._memory = memory
        self._tools = tools
        self._retry_sleep = retry_sleep
        self._store: SQLiteStore | None = None
        self._llm: LLMClient | None = None
        self._service: ChatService | None = None
        self._commands: Commands | None = None

    @property
    def store(self) -> SQLiteStore:
        assert self._store is not None, "App is not started"
        return self._store

    @property
    def service(self) -> ChatService:
        assert self._service is not None, "App is not started"
        return self._service

    @property
    def commands(self) -> Commands:
        assert self._commands is not None, "App is not started"
        return self._commands

    async def __aenter__(self) -> App:
        check_llm_settings(self.settings)
        self._store = SQLiteStore(self.settings.storage.path)
        await self._store.open()
        try:
            self._llm = LLMClient(self.settings.llm, sleep=self._retry_sleep)
            self._service = ChatService(
                self.settings, self._store, self._llm, memory=self._memory, tools=self._tools
            )
            await self._service.start()
            self._commands = Commands(self._service)
        except BaseException:
            await self.aclose()
            raise
        log.info(
            "parlour started model=%s base_url=%s db=%s",
            self.settings.llm.model,
            safe_url(self.settings.llm.effective_base_url),
            self.settings.storage.path,
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.close()
            self._llm = None
        if self._store is not None:
            await self._store.close()
            self._store = None
