"""The admin API's response bodies: pydantic models, so the OpenAPI document is built from the
very classes the handlers serialise (:mod:`adapters.http.admin.openapi`) and cannot drift from
them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Body",
    "ErrorBody",
    "ErrorDetail",
    "KnowledgeBaseInfo",
    "KnowledgeBaseList",
    "KnowledgeChunkInfo",
    "KnowledgeDocumentChunks",
    "KnowledgeDocumentInfo",
    "KnowledgeDocumentList",
    "KnowledgeUpload",
    "MCPList",
    "MCPServer",
    "PluginFailure",
    "PluginInfo",
    "PluginList",
    "ReminderInfo",
    "ReminderList",
    "SkippedTool",
    "UsageChat",
    "UsageDay",
    "UsageFigures",
    "UsageReport",
    "UsageRow",
    "UsageUser",
]


class Body(BaseModel):
    """A response body: frozen, and nothing but its fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ErrorDetail(Body):
    message: str
    code: str


class ErrorBody(Body):
    """Every ``/api`` error: ``{"error": {"message", "code"}}``."""

    error: ErrorDetail


class UsageFigures(Body):
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = Field(0, description="part of prompt_tokens a prompt cache served")
    total_tokens: int = Field(0, description="prompt + completion (cached is not extra)")


class UsageDay(UsageFigures):
    day: str = Field(description="UTC day, YYYY-MM-DD")


class UsageChat(UsageFigures):
    chat_key: str


class UsageUser(UsageFigures):
    platform: str
    user_id: str
    user_name: str


class UsageRow(UsageFigures):
    day: str
    chat_key: str
    user_id: str
    user_name: str


class UsageReport(Body):
    """Tokens from ``since`` to today (UTC): per day (every day, zeros included, for charts),
    per chat and per user (most tokens first), and the ledger's rows."""

    since: str
    days: list[UsageDay]
    chats: list[UsageChat]
    users: list[UsageUser]
    rows: list[UsageRow]
    total: UsageFigures


class PluginInfo(Body):
    name: str
    module: str
    tools: list[str]
    commands: list[str]
    job_kinds: list[str]


class PluginFailure(Body):
    module: str
    error: str


class PluginList(Body):
    plugins: list[PluginInfo]
    failed: list[PluginFailure] = Field(description="configured plugins that did not load")


class SkippedTool(Body):
    name: str
    reason: str


class MCPServer(Body):
    name: str
    transport: str
    state: str = Field(description="starting, ready, retrying or stopped")
    tools: list[str]
    skipped: list[SkippedTool]
    error: str
    retry_in: float | None
    restarts: int


class MCPList(Body):
    servers: list[MCPServer] = Field(description="empty when no MCP server is configured")


class ReminderInfo(Body):
    id: str = Field(description="the job id, for DELETE /api/reminders/{id}")
    chat_key: str
    user_id: str
    user_name: str
    text: str
    next_run: str = Field(description="ISO 8601, UTC")


class ReminderList(Body):
    reminders: list[ReminderInfo]


class KnowledgeBaseInfo(Body):
    name: str
    description: str = Field(description="from config (knowledge.bases)")
    documents: int = Field(description="documents stored in it")


class KnowledgeBaseList(Body):
    bases: list[KnowledgeBaseInfo] = Field(description="every base config declares, by name")


class KnowledgeDocumentInfo(Body):
    source: str = Field(description="the name the document is known by in its base")
    format: str = Field(description="markdown, text, html, pdf or docx")
    chunks: int
    tokens: int = Field(description="tokens of its chunks together")
    content_hash: str = Field(description="of the bytes as given (an unchanged file is skipped)")
    added_by: str = Field(description="cli, http:<token name>, or a chat user's id")
    added_at: str = Field(description="ISO 8601, UTC")


class KnowledgeDocumentList(Body):
    base: str
    documents: list[KnowledgeDocumentInfo] = Field(description="by source")


class KnowledgeChunkInfo(Body):
    ordinal: int = Field(description="its place in the document, from 0")
    headings: list[str] = Field(description="the heading path it sits under, outermost first")
    page: int | None = Field(
        description="the PDF page it starts on, from 1 (null: a format without pages)"
    )
    tokens: int
    text: str


class KnowledgeDocumentChunks(Body):
    base: str
    document: KnowledgeDocumentInfo
    chunks: list[KnowledgeChunkInfo] = Field(description="in document order")


class KnowledgeUpload(Body):
    outcome: Literal["added", "replaced", "unchanged"] = Field(
        description="replaced: its old chunks are gone; unchanged: the same bytes were there"
        " already, nothing was read again"
    )
    document: KnowledgeDocumentInfo
