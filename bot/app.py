"""One owner of the lifecycle: ``async with App(settings)`` opens the store, the LLM client and
the service; each open is paired with its close on one ``AsyncExitStack`` (as Starlette's
lifespan does), so they close in reverse order, each even when another close fails. Adapters
receive :attr:`App.platform`, the narrow seam (:mod:`bot.platform.seam`), never the app itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

from bot.config import Settings, safe_url, secret_values
from bot.context import ChatContext
from bot.conversation.ambient_command import add_ambient_command
from bot.conversation.catchup import CatchUp, add_catchup_command
from bot.conversation.commands import Commands
from bot.conversation.knowledge_command import KnowledgeDesk, add_knowledge_command
from bot.conversation.presets import ChatPresets
from bot.conversation.schedule_command import add_schedule_command
from bot.conversation.scheduled_posts import ScheduledPosts
from bot.conversation.service import ChatService
from bot.conversation.tool_runner import ToolRunner
from bot.conversation.tools_command import add_tools_command
from bot.errors import LLMError, StoreError
from bot.guardrails.admins import AdminPolicy
from bot.guardrails.recent_log import RecentLog
from bot.guardrails.redact import Redactor
from bot.llm.client import LLMClient
from bot.llm.embeddings import TextEmbedder, make_embedder
from bot.llm.retry import Sleep
from bot.llm.tokens import get_counter
from bot.mcp.status import ServerStatus
from bot.memory.backfill import LoggedProgress, backfill
from bot.memory.compaction import Compactor
from bot.memory.provider import MemoryProvider, StoredMemory
from bot.memory.store import MemoryStore
from bot.metrics import Metrics
from bot.platform.adapter_runs import AdapterRuns
from bot.platform.delivery import Outbound
from bot.platform.operator import Operator
from bot.platform.seam import Platform
from bot.plugins import PluginManager, ToolRegistry
from bot.prompt.recall_budget import recall_cap
from bot.scheduling.scheduler import Scheduler
from bot.storage import Storage, open_storage
from bot.storage.owners import new_owner

if TYPE_CHECKING:
    from bot.mcp.manager import MCPManager

log = logging.getLogger(__name__)

RETENTION_JOB = "parlour:retention"
HOUSEKEEPING_JOB = "parlour:housekeeping"


def check_llm_settings(settings: Settings) -> None:
    """Fail early, in one sentence, when the model cannot possibly be reached."""
    settings.llm.check_key()


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
        self._store: Storage | None = None
        self._llm: LLMClient | None = None
        self._service: ChatService | None = None
        self._commands: Commands | None = None
        self.metrics = Metrics()  # this app's own registry: GET /metrics (bot.metrics)
        self.outbound = Outbound(self.metrics)
        self.admins = AdminPolicy(settings)  # who is an admin, for tools, plugins and commands
        self._presets = ChatPresets(settings)  # a chat's plugins, from config chats:
        self.tools = self._registry()
        self.mcp: MCPManager | None = None
        self.scheduler: Scheduler | None = None
        self.memories: MemoryStore | None = None
        self.knowledge_desk: KnowledgeDesk | None = None  # knowledge.bases declared
        self.catchup: CatchUp | None = None  # catchup.enabled: /catchup
        self.schedules: ScheduledPosts | None = None  # schedules.enabled: /schedule
        self._embedder: TextEmbedder | None = None
        self._backfill: asyncio.Task[None] | None = None
        self.compactor: Compactor | None = None
        self._summary_llm: LLMClient | None = None
        self.plugins: PluginManager | None = None
        self._platform: Platform | None = None
        self._closes = AsyncExitStack()
        self.adapter_runs = AdapterRuns()  # ``run`` starts the adapters through it
        # the last warnings and errors, masked with the config's secrets (the status page)
        self.recent_log = RecentLog(Redactor(secret_values(settings)))

    @property
    def store(self) -> Storage:
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

    @property
    def platform(self) -> Platform:
        """What adapters are created with: the running bot, as a platform sees it."""
        assert self._platform is not None, "App is not started"
        return self._platform

    def _seam(self, service: ChatService, commands: Commands, store: Storage) -> Platform:
        from bot.knowledge.library import KnowledgeLibrary  # loaded already (/knowledge's)

        tools = self.tools
        operator = Operator(
            chats=service,
            metrics=self.metrics,
            memories=self.memories,
            mcp=self.mcp,
            plugins=self.plugins,
            scheduler=self.scheduler,
            schedules=self.schedules,
            adapters=self.adapter_runs,
            recent_log=self.recent_log,
            catchup=self.catchup,
            knowledge=KnowledgeLibrary(
                self.settings,
                store,
                get_counter(self.settings.llm.model).count_text,
                service.knowledge.added,
            ),
        )
        return Platform(
            settings=self.settings,
            conversation=service,
            commands=commands,
            outbound=self.outbound,
            store=store,
            has_admin_tools=lambda: tools.has_admin_tools,
            operator=operator,
            knowledge=self.knowledge_desk,
            chat_moved=self._chat_moved,
        )

    async def _chat_moved(self, old_chat_key: str, new_chat_key: str) -> None:
        """After a chat's history and settings moved to its new id (``Platform.migrate_chat``):
        its scheduled posts, and the records of plugins that asked (reminders), follow."""
        if self.schedules is not None:
            try:
                await self.schedules.moved(old_chat_key, new_chat_key)
            except Exception:  # the plugins' records still move
                log.exception("scheduled posts of %s not moved to %s", old_chat_key, new_chat_key)
        if self.plugins is not None:
            await self.plugins.chat_moved(old_chat_key, new_chat_key)

    async def __aenter__(self) -> App:
        check_llm_settings(self.settings)
        self._store = open_storage(self.settings)
        await self._store.open()
        self._on_close("_store", self._store.close)
        try:
            self.recent_log.install()  # before the plugins and servers: their failures show
            self._closes.callback(self.recent_log.remove)
            # replicas share limits and breakers through the database; one process keeps its own
            shared = self._store if self._store.replicas else None
            self._llm = LLMClient(
                self.settings.llm, sleep=self._retry_sleep, shared=shared, metrics=self.metrics
            )
            self._on_close("_llm", self._llm.close)
            memory = self._memory
            if self.settings.memory.enabled:
                if self.settings.memory.embeddings.enabled:
                    self._embedder = make_embedder(
                        self.settings.memory.embeddings, self.settings.llm, sleep=self._retry_sleep
                    )
                    self._on_close("_embedder", self._embedder.close)
                self.memories = MemoryStore(
                    self._store, self._embedder, share_private=self.settings.memory.share_private
                )
                # its background embedding stops before the embedder closes
                self._closes.push_async_callback(self.memories.aclose)
                await self.memories.sync_turns()  # index messages written before an upgrade
                if self._embedder is not None:  # in the background: a slow endpoint won't block
                    self._backfill = asyncio.create_task(self._backfill_vectors(self.memories))
                    self._closes.push_async_callback(self._stop_backfill)
                memory = memory or StoredMemory(
                    self.memories,
                    self.settings.memory,
                    get_counter(self._llm.model).count_text,  # the prompt's own counter
                    recall_cap(self.settings),  # the prompt's own cap
                )
            self.tools = self._registry()
            if self.settings.memory.summarize:
                summary_llm = self._llm
                if self.settings.memory.summary_model:
                    own = self.settings.llm.model_copy(
                        update={"model": self.settings.memory.summary_model}
                    )
                    summary_llm = self._summary_llm = LLMClient(
                        own, sleep=self._retry_sleep, shared=shared, metrics=self.metrics
                    )
                    self._on_close("_summary_llm", summary_llm.close)
                self.compactor = Compactor(self.settings, self._store, summary_llm, self.memories)
                self._on_close("compactor", self.compactor.aclose)
            self._service = ChatService(
                self.settings,
                self._store,
                self._llm,
                memory=memory,
                tools=self._tools if self._tools is not None else self.tools,
                admins=self.admins,
                compactor=self.compactor,
                shared_limits=shared,
                metrics=self.metrics,
            )
            await self._service.start()
            self._embed_knowledge(self._service)
            self._commands = Commands(self._service)
            self.scheduler = self._open_scheduler(self._store)
            self._on_close("scheduler", self.scheduler.shutdown)
            self.plugins = PluginManager(
                self.tools,
                self._commands,
                self._store,
                self.outbound,
                self.scheduler,
                memories=self.memories,
                conversation_of=self._service.conversation_key,
            )
            self._on_close("plugins", self.plugins.teardown_all)
            # Plugins register their job handlers before the scheduler starts: a job that fell
            # due while the bot was down runs at start, and must find its handler.
            await self.plugins.load_all(
                self.settings.plugins, required=self.settings.plugins_required
            )
            self._start_mcp()
            add_tools_command(self._commands, self.tools, self._mcp_statuses)
            add_ambient_command(self._commands)  # /ambient on|off: admins, audited
            if self.settings.catchup.enabled:  # /catchup, and the admin API's catch-up
                self.catchup = CatchUp(self._service, self._store)
                add_catchup_command(self._commands, self.catchup)
            if self.settings.knowledge.bases:  # /knowledge, and documents sent to chats
                self.knowledge_desk = KnowledgeDesk(
                    self._service.knowledge, self._service.admit_command
                )
                add_knowledge_command(self._commands, self.knowledge_desk)
            if self.settings.schedules.enabled:  # /schedule; its runs' handler before start
                self.schedules = ScheduledPosts(
                    self.settings, self._service, self.scheduler, self.outbound, self._store
                )
                add_schedule_command(self._commands, self.schedules)
            self._schedule_housekeeping(self.scheduler)
            await self.scheduler.start()
            self._platform = self._seam(self._service, self._commands, self._store)
        except BaseException:
            await self.aclose()
            raise
        log.info(
            "parlour started model=%s base_url=%s db=%s",
            self.settings.llm.model,
            safe_url(self.settings.llm.effective_base_url),
            self._store.url,
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _start_mcp(self) -> None:
        """After the plugins, so an MCP tool whose name a plugin tool holds gets its server's
        prefix. Each server connects in the background: none holds the bot's start."""
        if not self.settings.mcp.enabled:
            return
        from bot.mcp.manager import MCPManager  # the SDK loads only when a server is configured

        self.mcp = MCPManager(self.settings, self.tools, servers_for=self._presets.mcp_servers)
        self.mcp.start()
        self._on_close("mcp", self.mcp.aclose)  # its servers stop (stdio children are ended)

    def _mcp_statuses(self, ctx: ChatContext) -> list[ServerStatus]:
        return self.mcp.statuses(ctx) if self.mcp is not None else []

    def _registry(self) -> ToolRegistry:
        presets = self._presets
        return ToolRegistry(
            self.admins.is_admin,
            plugins_for=presets.plugins,
            servers_for=presets.mcp_servers,
            metrics=self.metrics,
        )

    def _open_scheduler(self, store: Storage) -> Scheduler:
        """Jobs beside the history: their own SQLite file, or the shared PostgreSQL database,
        where replicas fire them one leader at a time (:mod:`bot.scheduling.scheduler`)."""
        url = self.settings.storage.effective_url
        if url.is_postgresql:
            leases = store if store.replicas else None
            owner = new_owner()  # one name per replica: two apps in one process (tests) both run
            seconds = self.settings.storage.scheduler_lease_seconds
            return Scheduler(
                url, name=f"parlour:{owner}", leases=leases, owner=owner, lease_seconds=seconds
            )
        jobs = self.settings.storage.effective_jobs_path
        return Scheduler(jobs, name=f"parlour:{jobs.resolve()}")

    def _schedule_housekeeping(self, scheduler: Scheduler) -> None:
        scheduler.register(HOUSEKEEPING_JOB, self._housekeeping)
        scheduler.every(HOUSEKEEPING_JOB, HOUSEKEEPING_JOB, timedelta(minutes=15))
        days = self.settings.history.retention_days
        scheduler.register(RETENTION_JOB, self._apply_retention)
        if days is None:
            scheduler.cancel(RETENTION_JOB)
        else:
            scheduler.every(RETENTION_JOB, RETENTION_JOB, timedelta(hours=1))

    async def _housekeeping(self, job_id: str, payload: dict[str, Any]) -> None:
        """Turns a crashed process left pending become unanswered (and retention can go)."""
        await self.store.close_interrupted_turns()

    async def _apply_retention(self, job_id: str, payload: dict[str, Any]) -> None:
        days = self.settings.history.retention_days
        if days is not None:
            await self.store.delete_older_than(days * 86400)

    def _embed_knowledge(self, service: ChatService) -> None:
        """With embeddings and a declared base: chunks get vectors (now, in the background,
        and after each upload) and searches fuse them with full-text rank."""
        if self._embedder is None or self.memories is None or not self.settings.knowledge.bases:
            return
        from bot.knowledge.embedding import ChunkEmbedding
        from bot.knowledge.retrieval import QueryVectors

        embedding = ChunkEmbedding(self.store, self._embedder)
        floor = self._embedder.settings.similarity_floor
        vectors = QueryVectors(self._embedder.model, floor, self.memories.query_vector)
        service.knowledge.use_embeddings(vectors, embedding)
        self._closes.push_async_callback(embedding.aclose)  # before the embedder closes
        embedding.later()

    async def _backfill_vectors(self, memories: MemoryStore) -> None:
        """Embed what has no vector of the current model: memories stored while the endpoint
        was down, and everything from before embeddings were on (``bot.memory.backfill``)."""
        try:
            counts = await backfill(memories, await self.store.conversations(), LoggedProgress())
        except (LLMError, StoreError) as exc:
            log.warning("vectors not backfilled, retried at next start: %s", exc)
        else:
            if counts.memories or counts.messages:
                log.info(
                    "vectors backfilled memories=%d messages=%d conversations=%d",
                    counts.memories,
                    counts.messages,
                    counts.conversations,
                )

    def _on_close(self, name: str, close: Callable[[], Awaitable[object]]) -> None:
        """Pair the part just opened (the attribute ``name``) with its close; forgotten once
        closed."""

        async def closing() -> None:
            try:
                await close()
            finally:
                setattr(self, name, None)

        self._closes.push_async_callback(closing)

    async def wait_for_backfill(self) -> None:
        """Until the start's background embedding is done (tests and benchmarks)."""
        if self._backfill is not None:
            await asyncio.gather(self._backfill, return_exceptions=True)

    async def _stop_backfill(self) -> None:
        if self._backfill is not None:
            self._backfill.cancel()
            await asyncio.gather(self._backfill, return_exceptions=True)
            self._backfill = None

    async def aclose(self) -> None:
        """Close what is open, last opened first (the plugins before the scheduler they use,
        the store last)."""
        self._platform = None
        closes, self._closes = self._closes, AsyncExitStack()
        await closes.aclose()
