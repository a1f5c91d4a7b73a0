"""The admin API's response bodies: pydantic models, so the OpenAPI document is built from the
very classes the handlers serialise (:mod:`adapters.http.admin.openapi`) and cannot drift from
them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Body",
    "ErrorBody",
    "ErrorDetail",
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
