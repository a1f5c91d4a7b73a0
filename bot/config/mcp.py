"""``mcp:``: Model Context Protocol servers whose tools the model may call beside plugin tools.

Each entry of ``mcp.servers`` is a server, by a name of your choosing: a program to start
(``command``, spoken to over stdio) or a URL (streamable HTTP). Header and environment values
are secrets: write ``${VAR}`` to take them from the environment; they are never logged or shown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator, model_validator

from bot.config.base import Section

SERVER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,32}$")


class MCPServerSettings(Section):
    command: tuple[str, ...] | None = Field(
        None, description="argv of a server to start and speak to over stdio, e.g. [uvx, my-mcp]"
    )
    env: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="environment for the command (added to a safe default set; never logged)",
    )
    cwd: Path | None = Field(None, description="working directory for the command")
    url: str | None = Field(None, description="a streamable HTTP endpoint, e.g. http://host/mcp")
    headers: dict[str, SecretStr] = Field(
        default_factory=dict,
        description='HTTP headers for url (e.g. Authorization: "Bearer ${TOKEN}"; never logged)',
    )
    enabled: bool = Field(True, description="false: configured but not started")
    admin_only: bool | tuple[str, ...] = Field(
        False, description="true: every tool is for chat admins only; or a list of tool names"
    )
    allow: tuple[str, ...] = Field(
        ("*",), description="tool name patterns (fnmatch) offered from this server"
    )
    deny: tuple[str, ...] = Field((), description="tool name patterns never offered (wins)")
    timeout: float = Field(30.0, gt=0, le=3600, description="seconds one tool call may take")
    max_output: int = Field(
        4000, ge=100, le=200_000, description="characters of a result the model gets"
    )
    connect_timeout: float = Field(
        30.0, gt=0, le=600, description="seconds to start and connect before a retry"
    )

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("give the command as a list: [program, arg, ...]")
        if isinstance(value, list | tuple) and (not value or not all(str(v) for v in value)):
            raise ValueError("give the program and its arguments, none empty")
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("use an http:// or https:// URL")
        return value

    @field_validator("admin_only", "allow", "deny", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (stdio) or url (streamable HTTP), not both")
        if self.url is None and self.headers:
            raise ValueError("headers go with url; a command server takes env")
        if self.command is None and (self.env or self.cwd is not None):
            raise ValueError("env and cwd go with command; a url server takes headers")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


class MCPSettings(Section):
    servers: dict[str, MCPServerSettings] = Field(
        default_factory=dict,
        description="name -> an MCP server (command or url); its tools join the plugins' tools",
    )

    @field_validator("servers", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for name in value:
                if not SERVER_NAME.match(str(name)):
                    raise ValueError("server names use 1-32 of a-z, A-Z, 0-9, _ and -")
        return value

    @property
    def enabled(self) -> dict[str, MCPServerSettings]:
        return {name: server for name, server in self.servers.items() if server.enabled}
