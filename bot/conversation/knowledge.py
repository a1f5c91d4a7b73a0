"""A chat's knowledge bases in its conversation: the bases it searches, the passages one turn
gives the model (before the call, and through the ``search_knowledge`` tool), and the sources
line under the answer.

Passages are numbered once per turn, across the block sent before the call and every search
the model makes, so ``[2]`` means one passage wherever it appears; the sources line names only
passages this turn gave (a number the model or a user invents names nothing). Binding a base
by command is an admin's act, and one that shares documents: a chat admin may bind only bases
marked ``shared``, a bot admin any declared base (``chats:`` presets bind in config).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from bot.config import Settings
from bot.context import ChatContext
from bot.conversation.presets import ChatPresets
from bot.conversation.tool_loop import Answer
from bot.conversation.tool_runner import ToolRunner
from bot.guardrails.admins import AdminPolicy
from bot.knowledge.embedding import ChunkEmbedding
from bot.knowledge.retrieval import QueryVectors, bases_for, passage_cap, retrieve
from bot.llm.client import ToolCall
from bot.llm.tokens import TokenCounter
from bot.plugins.output import ToolResult
from bot.prompt.passages import (
    NumberedPassage,
    cited_numbers,
    highest_number,
    passages_message,
    sources_line,
    tool_result,
)
from bot.storage.knowledge import (
    FoundChunk,
    KnowledgeBindings,
    KnowledgeDocuments,
    KnowledgeVectors,
)
from bot.values import StoredTurn

__all__ = ["SEARCH_TOOL", "Knowledge", "KnowledgeStore", "KnowledgeTools", "KnowledgeTurn"]

log = logging.getLogger(__name__)

SEARCH_TOOL_NAME = "search_knowledge"
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SEARCH_TOOL_NAME,
        "description": (
            "Search this chat's knowledge bases (its documents: rules, FAQ, manuals) for"
            " passages. Use it when the passages you were given do not answer the question,"
            " with your own query words."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "what to look for: key words or a question",
                    "minLength": 1,
                    "maxLength": 500,
                }
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}
Message = dict[str, Any]


class KnowledgeStore(KnowledgeDocuments, KnowledgeVectors, KnowledgeBindings, Protocol):
    """The documents, their vectors and the chats' bindings."""


class Knowledge:
    """The conversation's view of knowledge bases: per chat, per turn, and the bindings."""

    def __init__(
        self,
        settings: Settings,
        store: KnowledgeStore,
        presets: ChatPresets,
        admins: AdminPolicy,
        counter: TokenCounter,
    ) -> None:
        self.settings = settings
        self.store = store
        self.presets = presets
        self.admins = admins
        self.counter = counter
        self.vectors: QueryVectors | None = None  # with embeddings: fused with full-text
        self.embedding: ChunkEmbedding | None = None

    def use_embeddings(self, vectors: QueryVectors, embedding: ChunkEmbedding) -> None:
        """Search with vectors too, and embed documents as they are added."""
        self.vectors, self.embedding = vectors, embedding

    def added(self) -> None:
        """A document was added: its chunks get their vectors in the background."""
        if self.embedding is not None:
            self.embedding.later()

    @property
    def declared(self) -> bool:
        return bool(self.settings.knowledge.bases)

    async def bases(self, ctx: ChatContext) -> tuple[str, ...]:
        """The bases this chat searches (none when config declares none: nothing is read)."""
        if not self.declared:
            return ()
        return await bases_for(self.store, self.settings, ctx.chat_key, self.presets.knowledge(ctx))

    async def turn(
        self,
        ctx: ChatContext,
        tools: ToolRunner | None = None,
        history: Sequence[StoredTurn] = (),
    ) -> KnowledgeTurn:
        """This turn's knowledge (where no base is bound: none, and ``tools`` as they are);
        its passages are numbered on from those ``history`` (the window) still shows."""
        bases = await self.bases(ctx)
        turn = KnowledgeTurn(self.settings, self.store, bases, self.counter, self.vectors)
        if bases:
            turn.first = 1 + highest_number(m for t in history for m in t.messages)
        offered = bases and self.settings.knowledge.tool
        turn.runner = KnowledgeTools(tools, turn) if offered else tools
        return turn

    # -- the /knowledge command's backing -----------------------------------------------------

    def may_bind(self, ctx: ChatContext, base: str) -> bool:
        """A bot admin binds any declared base; a chat admin only a ``shared`` one."""
        declared = self.settings.knowledge.bases.get(base)
        if declared is None:
            return False
        return self.admins.is_bot_admin(ctx) or (declared.shared and self.admins.is_admin(ctx))

    def may_upload(self, ctx: ChatContext, base: str) -> bool:
        """A bot admin adds to any base; a chat admin only to a base that takes ``chat_uploads``
        and that this chat's ``chats:`` preset binds (the operator's choice, never one a chat
        admin bound with a command: anyone can make a group and bind a shared base to it)."""
        declared = self.settings.knowledge.bases.get(base)
        if declared is None:
            return False
        if self.admins.is_bot_admin(ctx):
            return True
        bound_by_config = base in self.presets.knowledge(ctx)
        return declared.chat_uploads and bound_by_config and self.admins.is_admin(ctx)

    def may_replace(self, ctx: ChatContext, added_by: str) -> bool:
        """A document someone else added is replaced only by a bot admin (never by another
        chat's admin uploading a file of the same name)."""
        return self.admins.is_bot_admin(ctx) or added_by == f"{ctx.platform}:{ctx.user_id}"

    def preset_bases(self, ctx: ChatContext) -> tuple[str, ...]:
        return self.presets.knowledge(ctx)


class KnowledgeTurn:
    """One turn's passages, numbered once, and the sources line they allow."""

    def __init__(
        self,
        settings: Settings,
        store: KnowledgeStore,
        bases: tuple[str, ...],
        counter: TokenCounter,
        vectors: QueryVectors | None = None,
    ) -> None:
        self.options = settings.knowledge
        self.vectors = vectors
        self.store = store
        self.bases = bases
        self.counter = counter
        self.cap = passage_cap(settings)
        self.tool_cap = passage_cap(settings, tool=True)
        self._given: dict[int, NumberedPassage] = {}  # by chunk id
        self.runner: ToolRunner | None = None  # the chat's tools, with search_knowledge
        self.first = 1  # this turn's first passage number

    @property
    def given(self) -> list[NumberedPassage]:
        return sorted(self._given.values(), key=lambda p: p.number)

    async def before_call(self, query: str) -> list[Message]:
        """The block of passages for the message, within ``knowledge.max_tokens``."""
        if not self.bases:
            return []
        found = await retrieve(
            self.store, self.bases, query, limit=self.options.top_k, max_tokens=self.cap,
            count=self.counter.count_text, vectors=self.vectors,
        )  # fmt: skip
        passages = self._numbered(found)
        return [passages_message(passages)] if passages else []

    async def search(self, query: str) -> str:
        """The tool's answer: passages for the model's own query (numbered on from the block)."""
        found = await retrieve(
            self.store, self.bases, query, limit=self.options.top_k,
            max_tokens=self.tool_cap, count=self.counter.count_text, vectors=self.vectors,
        )  # fmt: skip
        return tool_result(self._numbered(found))

    def cite(self, answer: Answer) -> str:
        """Add the sources line under ``answer``'s final text; returns what was added."""
        sources = self.sources(answer.final.text) if self._given else ""
        if not sources:
            return ""
        answer.add_note(f"\n\n{sources}")
        return f"\n\n{sources}"

    def sources(self, text: str) -> str:
        """The sources line for an answer reading ``text`` (empty: none to show)."""
        mode = self.options.citations
        if mode == "off":
            return ""
        by_number = {p.number: p for p in self._given.values()}
        if mode == "retrieved":
            return sources_line(self.given)
        return sources_line(by_number[n] for n in cited_numbers(text) if n in by_number)

    def _numbered(self, chunks: Sequence[FoundChunk]) -> list[NumberedPassage]:
        passages = []
        for chunk in chunks:
            passage = self._given.get(chunk.chunk_id)
            if passage is None:
                passage = NumberedPassage(
                    self.first + len(self._given),
                    chunk.source,
                    chunk.headings,
                    chunk.page,
                    chunk.text,
                )
                self._given[chunk.chunk_id] = passage
            passages.append(passage)
        return passages


class KnowledgeTools:
    """The chat's tools plus ``search_knowledge``, which runs against this turn's bases."""

    def __init__(self, inner: ToolRunner | None, turn: KnowledgeTurn) -> None:
        self.inner = inner
        self.turn = turn

    def definitions(self, ctx: ChatContext) -> list[dict[str, Any]]:
        others = self.inner.definitions(ctx) if self.inner is not None else []
        return [*(d for d in others if _name(d) != SEARCH_TOOL_NAME), SEARCH_TOOL]

    async def run(self, ctx: ChatContext, call: ToolCall) -> ToolResult:
        if call.name != SEARCH_TOOL_NAME:
            if self.inner is None:
                return f"Error: there is no tool named {call.name!r}."
            return await self.inner.run(ctx, call)
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"Error: the arguments are not valid JSON ({exc.msg}). Call it again."
        query = arguments.get("query") if isinstance(arguments, dict) else None
        if not isinstance(query, str) or not query.strip():
            return "Error: search_knowledge needs a non-empty string `query`."
        try:
            return await self.turn.search(query[:500])
        except Exception:
            log.exception("search_knowledge failed chat=%s", ctx.chat_key)
            return "Error: search_knowledge failed (an internal error). Tell the user."


def _name(definition: dict[str, Any]) -> str:
    return str(definition.get("function", {}).get("name", ""))
