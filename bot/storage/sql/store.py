"""What both backends' stores are made of: one object per idea, each over the seam.

:class:`SQLStore` holds the parts and answers every storage method that is the same SQL on
both backends by handing it to its part (:class:`~bot.storage.sql.seam.via`). A backend's
store subclasses it, builds the parts with :meth:`SQLStore._compose`, and adds what really
differs: the connection, migrations, turns and the window, search, coordination.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, Self

from bot.storage import owners
from bot.storage.coordination import Inbox, Leases, SharedLimits
from bot.storage.knowledge import KnowledgeBindings, KnowledgeDocuments, KnowledgeVectors
from bot.storage.memories import MemoryRecords, MemorySearch, MemoryVectors
from bot.storage.sql.audit import Audit
from bot.storage.sql.deliveries import DeliveryRecords
from bot.storage.sql.directory import Directory
from bot.storage.sql.erasure import Eraser
from bot.storage.sql.history import History
from bot.storage.sql.knowledge import KnowledgeRows
from bot.storage.sql.ledger import PluginData, UsageBook
from bot.storage.sql.maintenance import ChatMoved, Upkeep, close_interrupted
from bot.storage.sql.overheard import OverheardRows
from bot.storage.sql.seam import Database, Windows, via
from bot.storage.sql.summaries import SummaryRows
from bot.storage.sql.transcript import TranscriptRows
from bot.storage.turns import Turns
from bot.values import Overheard, PromptRows


class Memories(MemoryRecords, MemorySearch, MemoryVectors, Protocol):
    """Memories and their search: per backend (FTS5 or tsvector scoring)."""


class Coordination(Inbox, Leases, SharedLimits, Protocol):
    """What replicas agree on: per backend (each database's own primitives)."""


class SQLStore:
    """The parts of a backend's store, and the methods they answer. ``turns``, ``memories``
    and ``coordination`` are the backend's own; the rest is shared."""

    turns: Turns
    memories: Memories
    knowledge: KnowledgeRows  # the backend's (its index and search)
    coordination: Coordination
    seam: Database
    owner: str  # this instance, on every turn it begins (bot.storage.owners)
    reads_wait = True  # bot.storage.prompt_windows; SQLite's are answered in process

    history: History
    audits: Audit
    directory: Directory
    eraser: Eraser
    usage: UsageBook
    plugin_data: PluginData
    summaries: SummaryRows
    delivery_records: DeliveryRecords
    overheard: OverheardRows
    transcripts: TranscriptRows
    upkeep: Upkeep

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect (and migrate), then close the turns a dead process left pending."""
        owners.register(self.owner)
        try:
            await self._connect()
            await close_interrupted(self.seam)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        owners.unregister(self.owner)
        await self._disconnect()

    async def _connect(self) -> None: ...  # the backend's own

    async def _disconnect(self) -> None: ...

    def _compose(self, db: Database, windows: Windows, owner: str, chat_moved: ChatMoved) -> None:
        self.seam, self.owner = db, owner
        self.history = History(db, windows)
        self.audits = Audit(db)
        self.directory = Directory(db)
        self.eraser = Eraser(db, windows)
        self.usage = UsageBook(db)
        self.plugin_data = PluginData(db)
        self.summaries = SummaryRows(db)
        self.delivery_records = DeliveryRecords(db, owner)
        self.overheard = OverheardRows(db)
        self.transcripts = TranscriptRows(db)
        self.upkeep = Upkeep(db, windows, chat_moved)

    async def load_prompt_rows(
        self, conversation_key: str, max_turns: int, overheard_since: float | None
    ) -> PromptRows:
        """The three reads in one wait (SQLite answers each from memory while nothing changed:
        ``row_cache``); PostgreSQL overrides it with one statement (``postgres/turns.py``)."""
        window, overheard, mark = await asyncio.gather(
            self.load_window(conversation_key, max_turns),
            _overheard(self, conversation_key, overheard_since),
            self.load_window_mark(conversation_key),
        )
        return PromptRows(window, overheard, mark)

    reset = via("history", History.reset)
    reset_point = via("history", History.reset_point)
    clear_chat = via("history", History.clear_chat)
    clear_audit = via("history", History.clear_audit)
    stats = via("history", History.stats)
    export = via("history", History.export)
    conversations = via("history", History.conversations)
    turn_exists = via("history", History.turn_exists)
    load_preferences = via("history", History.load_preferences)
    save_preferences = via("history", History.save_preferences)

    record_change = via("audits", Audit.record_change)
    audit = via("audits", Audit.audit)

    note_chat = via("directory", Directory.note_chat)
    list_chats = via("directory", Directory.list_chats)
    chat_summary = via("directory", Directory.chat_summary)
    chat_conversations = via("directory", Directory.chat_conversations)
    history_page = via("directory", Directory.history_page)

    delete_user = via("eraser", Eraser.delete_user)

    tokens_on = via("usage", UsageBook.tokens_on)
    user_tokens_on = via("usage", UsageBook.user_tokens_on)
    user_usage_on = via("usage", UsageBook.user_usage_on)
    budget_figures = via("usage", UsageBook.budget_figures)
    book_usage = via("usage", UsageBook.book_usage)
    daily_usage = via("usage", UsageBook.daily_usage)

    kv_get = via("plugin_data", PluginData.kv_get)
    kv_set = via("plugin_data", PluginData.kv_set)
    kv_increment = via("plugin_data", PluginData.kv_increment)
    kv_delete = via("plugin_data", PluginData.kv_delete)
    kv_items = via("plugin_data", PluginData.kv_items)

    load_summary = via("summaries", SummaryRows.load_summary)
    count_summary_turn = via("summaries", SummaryRows.count_summary_turn)
    restart_summary_count = via("summaries", SummaryRows.restart_summary_count)
    save_summary = via("summaries", SummaryRows.save_summary)
    turns_between = via("summaries", SummaryRows.turns_between)
    load_window_mark = via("summaries", SummaryRows.load_window_mark)
    save_window_mark = via("summaries", SummaryRows.save_window_mark)

    begin_delivery = via("delivery_records", DeliveryRecords.begin_delivery)
    update_delivery = via("delivery_records", DeliveryRecords.update_delivery)
    end_delivery = via("delivery_records", DeliveryRecords.end_delivery)
    deliveries = via("delivery_records", DeliveryRecords.deliveries)

    record_overheard = via("overheard", OverheardRows.record_overheard)
    replace_overheard = via("overheard", OverheardRows.replace_overheard)
    load_overheard = via("overheard", OverheardRows.load_overheard)

    said = via("transcripts", TranscriptRows.said)

    close_interrupted_turns = via("upkeep", Upkeep.close_interrupted_turns)
    delete_older_than = via("upkeep", Upkeep.delete_older_than)
    migrate_chat = via("upkeep", Upkeep.migrate_chat)

    begin_turn = via("turns", Turns.begin_turn)
    complete_turn = via("turns", Turns.complete_turn)
    fail_turn = via("turns", Turns.fail_turn)
    mark_undelivered = via("turns", Turns.mark_undelivered)
    load_window = via("turns", Turns.load_window)

    add_memory = via("memories", Memories.add_memory)
    delete_memory = via("memories", Memories.delete_memory)
    list_memories = via("memories", Memories.list_memories)
    clear_memories = via("memories", Memories.clear_memories)
    move_memories = via("memories", Memories.move_memories)
    search_memories = via("memories", Memories.search_memories)
    search_turns = via("memories", Memories.search_turns)
    turns_beside = via("memories", Memories.turns_beside)
    index_turns = via("memories", Memories.index_turns)
    put_vectors = via("memories", Memories.put_vectors)
    unembedded = via("memories", Memories.unembedded)
    memory_vectors = via("memories", Memories.memory_vectors)
    put_turn_vectors = via("memories", Memories.put_turn_vectors)
    unembedded_turns = via("memories", Memories.unembedded_turns)
    turn_vectors = via("memories", Memories.turn_vectors)

    put_document = via("knowledge", KnowledgeDocuments.put_document)
    list_documents = via("knowledge", KnowledgeDocuments.list_documents)
    document_chunks = via("knowledge", KnowledgeDocuments.document_chunks)
    remove_document = via("knowledge", KnowledgeDocuments.remove_document)
    remove_base = via("knowledge", KnowledgeDocuments.remove_base)
    search_chunks = via("knowledge", KnowledgeDocuments.search_chunks)
    reindex_base = via("knowledge", KnowledgeDocuments.reindex_base)
    unembedded_chunks = via("knowledge", KnowledgeVectors.unembedded_chunks)
    put_chunk_vectors = via("knowledge", KnowledgeVectors.put_chunk_vectors)
    chunk_vectors = via("knowledge", KnowledgeVectors.chunk_vectors)
    bind_base = via("knowledge", KnowledgeBindings.bind_base)
    unbind_base = via("knowledge", KnowledgeBindings.unbind_base)
    bound_bases = via("knowledge", KnowledgeBindings.bound_bases)
    base_bindings = via("knowledge", KnowledgeBindings.base_bindings)

    inbox_put = via("coordination", Coordination.inbox_put)
    inbox_amend = via("coordination", Coordination.inbox_amend)
    inbox_claim = via("coordination", Coordination.inbox_claim)
    inbox_renew = via("coordination", Coordination.inbox_renew)
    inbox_done = via("coordination", Coordination.inbox_done)
    inbox_release = via("coordination", Coordination.inbox_release)
    inbox_pending = via("coordination", Coordination.inbox_pending)
    inbox_following = via("coordination", Coordination.inbox_following)
    inbox_fold = via("coordination", Coordination.inbox_fold)
    inbox_progress = via("coordination", Coordination.inbox_progress)
    inbox_prune = via("coordination", Coordination.inbox_prune)
    acquire_lease = via("coordination", Coordination.acquire_lease)
    release_lease = via("coordination", Coordination.release_lease)
    lease_holder = via("coordination", Coordination.lease_holder)
    take_token = via("coordination", Coordination.take_token)
    claim_flight = via("coordination", Coordination.claim_flight)
    release_flight = via("coordination", Coordination.release_flight)
    breaker_failure = via("coordination", Coordination.breaker_failure)
    breaker_success = via("coordination", Coordination.breaker_success)
    breaker_state = via("coordination", Coordination.breaker_state)
    prune_limits = via("coordination", Coordination.prune_limits)


async def _overheard(store: SQLStore, key: str, since: float | None) -> list[Overheard]:
    return [] if since is None else await store.load_overheard(key, since)
