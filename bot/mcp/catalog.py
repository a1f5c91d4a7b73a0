"""A server's tool list, turned into the registry's tools: names, schemas, permissions.

* **Names** the chat API accepts (``^[a-zA-Z0-9_-]{1,64}$``): other characters become ``_``.
  A name a plugin tool holds, or that another configured server also offers, is prefixed with
  the server's name (``search_lookup``), so every tool stays reachable. Once both servers have
  listed their tools the names stay put, also while one of them restarts (the manager keeps
  each server's last list); before that, the first server up holds the plain name.
* **Schemas** are passed as the server gives them, checked for what the chat API takes: an
  object at the root (``type`` added when absent), no ``oneOf``/``anyOf``/``allOf``/``enum``/
  ``not`` at the top, a valid JSON Schema. A tool that fails is skipped and the reason kept for
  ``/tools`` and ``doctor``: one bad schema would otherwise make every request fail.
* **Permissions**: ``allow``/``deny`` patterns pick the tools; ``admin_only`` (all, or names)
  makes them admin tools, enforced by the registry when offering and when running.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import mcp_types as types
from jsonschema.exceptions import SchemaError

from bot.config import MCPServerSettings
from bot.mcp.status import Skipped
from bot.plugins.declare import Permission
from bot.plugins.external import ExternalCall, ExternalTool, schema_validator

__all__ = ["Catalog", "Skipped", "build_catalog", "chat_name", "chat_schema", "picked"]

_NAME_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_NOT_AT_TOP = ("oneOf", "anyOf", "allOf", "enum", "not")
MAX_DESCRIPTION = 1024  # characters of a tool's description sent with every request


@dataclass(frozen=True, slots=True)
class Catalog:
    tools: tuple[ExternalTool, ...]
    skipped: tuple[Skipped, ...]


def chat_name(name: str) -> str:
    """``name`` as the chat API takes it: other characters become ``_``; a name over 64 keeps
    its start and a short hash of the whole, so two long names stay apart."""
    clean = re.sub(r"[^a-zA-Z0-9_-]", "_", name) or "tool"
    if len(clean) <= 64:
        return clean
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{clean[:55]}_{digest}"


def chat_schema(schema: Any) -> dict[str, Any] | str:
    """The schema to send as ``parameters``, or why the chat API would refuse it."""
    if not isinstance(schema, dict):
        return "its inputSchema is not a JSON object"
    out = dict(schema)
    kind = out.setdefault("type", "object")
    if kind != "object":
        return f"its inputSchema has type {kind!r}; the chat API takes only 'object' at the root"
    at_top = [key for key in _NOT_AT_TOP if key in out]
    if at_top:
        return f"its inputSchema has {'/'.join(at_top)} at the top level (the chat API refuses it)"
    if not isinstance(out.setdefault("properties", {}), dict):
        return "its inputSchema's properties is not an object"
    if not isinstance(out.get("$schema", ""), str):  # jsonschema would raise TypeError on it
        return "its inputSchema's $schema is not a string"
    try:
        schema_validator(out)
    except SchemaError as exc:
        return f"its inputSchema is not a valid JSON Schema ({exc.message[:200]})"
    return out


def picked(name: str, settings: MCPServerSettings) -> bool:
    """``allow`` picks the tools, ``deny`` drops some of them (deny wins)."""
    if any(fnmatchcase(name, pattern) for pattern in settings.deny):
        return False
    return any(fnmatchcase(name, pattern) for pattern in settings.allow)


def _permission(name: str, settings: MCPServerSettings) -> Permission:
    rule = settings.admin_only
    if rule is True or (
        not isinstance(rule, bool) and any(fnmatchcase(name, pattern) for pattern in rule)
    ):
        return Permission.ADMINS
    return Permission.EVERYONE


def build_catalog(
    server: str,
    settings: MCPServerSettings,
    listed: Iterable[types.Tool],
    *,
    taken: Collection[str],
    call: Callable[[str, str], ExternalCall],
) -> Catalog:
    """The registry's tools for ``server``'s ``listed`` tools. ``taken``: names held elsewhere
    (plugin tools, and the tools other configured servers offer); ``call(remote, name)`` runs
    the server's tool ``remote``, offered to the model as ``name``."""
    tools: list[ExternalTool] = []
    skipped: list[Skipped] = []
    used: set[str] = set()
    for tool in listed:
        if not picked(tool.name, settings):
            continue
        schema = chat_schema(tool.input_schema)
        if isinstance(schema, str):
            skipped.append(Skipped(tool.name, schema))
            continue
        name = chat_name(tool.name)
        if name in taken or name in used:
            name = chat_name(f"{server}_{tool.name}")
        if name in taken or name in used:
            skipped.append(Skipped(tool.name, f"its name {name!r} is taken by another tool"))
            continue
        used.add(name)
        description = (tool.description or tool.title or "").strip()
        tools.append(
            ExternalTool(
                name=name,
                description=description[:MAX_DESCRIPTION],
                schema=schema,
                call=call(tool.name, name),
                source=f"mcp:{server}",
                remote_name=tool.name,
                permission=_permission(tool.name, settings),
                timeout=settings.timeout,
                max_output=settings.max_output,
            )
        )
    return Catalog(tuple(tools), tuple(skipped))


def valid_name(name: str) -> bool:
    return bool(_NAME_OK.match(name))
