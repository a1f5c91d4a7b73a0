"""A tool described by a JSON schema and run outside Python's reach (an MCP server's tool).

Plugin tools get their schema and validation from one pydantic model (:mod:`bot.plugins.declare`);
an external tool brings its schema as JSON, so its arguments are checked with ``jsonschema``
against exactly what the model was shown, before anything crosses to the server. Both are a
:class:`~bot.plugins.tool_protocol.Tool`: the same permissions, timeout and output cap apply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry
from referencing.exceptions import Unresolvable

from bot.context import ChatContext
from bot.plugins.declare import DEFAULT_MAX_OUTPUT, Permission
from bot.plugins.output import ToolResult
from bot.plugins.tool_protocol import Enabled

__all__ = ["ExternalCall", "ExternalTool", "schema_validator"]

ExternalCall = Callable[[dict[str, Any]], Awaitable[ToolResult]]
"""Runs the tool with arguments that passed the schema; raises on a transport failure."""


def schema_validator(schema: dict[str, Any]) -> Validator:
    """The validator for ``schema``'s own draft (``$schema``), 2020-12 when it names none (the
    draft MCP specifies). Raises ``jsonschema.SchemaError`` for a schema that is not valid.

    Its registry retrieves nothing: a server's ``$ref`` to a URL must not make the bot fetch it
    (jsonschema's default would, from wherever the bot runs)."""
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, registry=Registry())


@dataclass(frozen=True, slots=True)
class ExternalTool:
    name: str  # as offered to the model (prefixed with its server's name on a collision)
    description: str
    schema: dict[str, Any]  # the ``parameters`` the model sees, already checked
    call: ExternalCall
    source: str  # who provides it, e.g. "mcp:search" (presets and /tools name it)
    remote_name: str = ""  # the name the provider knows it by (empty: ``name``)
    permission: Permission = Permission.EVERYONE
    timeout: float = 30.0
    max_output: int = DEFAULT_MAX_OUTPUT
    validator: Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "validator", schema_validator(self.schema))
        if not self.remote_name:
            object.__setattr__(self, "remote_name", self.name)

    def definition(self) -> dict[str, Any]:
        function: dict[str, Any] = {"name": self.name, "parameters": self.schema}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def enabled(self, here: Enabled) -> bool:
        return here.servers is None or self.source.removeprefix("mcp:") in here.servers

    def arguments(self, raw: Any) -> dict[str, Any] | str:
        problems = self.problems(raw)
        if problems is not None:
            return problems
        return raw if isinstance(raw, dict) else {}

    async def invoke(self, ctx: ChatContext, values: dict[str, Any]) -> ToolResult:
        return await self.call(values)

    def problems(self, arguments: Any) -> str | None:
        """What is wrong with ``arguments`` (None: they fit), in a line the model can act on."""
        try:
            found = list(self.validator.iter_errors(arguments))
        except Unresolvable as exc:  # a $ref outside the schema: the check cannot be made
            return f"its schema refers to {str(exc.ref)[:200]!r}, which it does not contain"
        errors = sorted(found, key=lambda e: list(e.path))[:5]
        if not errors:
            return None
        parts = []
        for error in errors:
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            message = error.message if len(error.message) <= 200 else error.message[:200] + "…"
            parts.append(f"{where}: {message}")
        return "; ".join(parts)
