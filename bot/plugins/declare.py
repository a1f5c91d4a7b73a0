"""Declaring a tool: an async function whose signature is its schema.

``@tool`` reads the type hints (through a pydantic model built from the signature) and the
docstring, so the JSON schema the model sees and the validation its arguments get come from one
place. Mistakes fail at registration, not when the model first calls the tool: a bad name, a
parameter without annotation, a missing description, a first parameter that is not the
:class:`ToolContext`.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, create_model

from bot.errors import ParlourError

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_OUTPUT = 4000

ToolFunc = Callable[..., Awaitable[Any]]
F = TypeVar("F", bound=ToolFunc)


class ToolDefinitionError(ParlourError):
    """A tool declared wrongly (raised at decoration or registration time)."""


class Permission(StrEnum):
    EVERYONE = "everyone"
    ADMINS = "admins"  # the chat's platform admins and bot admins from config
    PRIVATE = "private"  # only in private chats


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[BaseModel]
    func: ToolFunc
    permission: Permission = Permission.EVERYONE
    timeout: float = DEFAULT_TIMEOUT
    max_output: int = DEFAULT_MAX_OUTPUT

    def definition(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry (built once: it is sent with every request)."""
        return _definition(self.name, self.description, self.arguments)


@overload
def tool(func: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    permission: Permission = Permission.EVERYONE,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> Callable[[F], F]: ...


def tool(
    func: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    permission: Permission = Permission.EVERYONE,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> F | Callable[[F], F]:
    """Mark ``async def f(ctx: ToolContext, ...)`` as a tool; use bare or with options."""

    def mark(target: F) -> F:
        spec = build_spec(
            target,
            name=name,
            description=description,
            permission=permission,
            timeout=timeout,
            max_output=max_output,
        )
        target.__parlour_tool__ = spec  # type: ignore[attr-defined]
        return target

    return mark(func) if func is not None else mark


def spec_of(func: ToolFunc) -> ToolSpec:
    """The spec of a ``@tool`` function (a plain async function gets the defaults)."""
    spec = getattr(func, "__parlour_tool__", None)
    return spec if isinstance(spec, ToolSpec) else build_spec(func)


def build_spec(
    func: ToolFunc,
    *,
    name: str | None = None,
    description: str | None = None,
    permission: Permission = Permission.EVERYONE,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> ToolSpec:
    tool_name = name or func.__name__
    where = f"tool {tool_name!r} ({func.__module__}.{func.__qualname__})"
    if not _NAME.match(tool_name):
        raise ToolDefinitionError(f"{where}: a name may only use a-z, A-Z, 0-9, _ and - (1-64)")
    if not inspect.iscoroutinefunction(func):
        raise ToolDefinitionError(f"{where}: must be an async function")
    text = description or _first_paragraph(inspect.getdoc(func))
    if not text:
        raise ToolDefinitionError(f"{where}: needs a docstring or description= for the model")
    if timeout <= 0 or max_output <= 0:
        raise ToolDefinitionError(f"{where}: timeout and max_output must be positive")
    return ToolSpec(
        name=tool_name,
        description=text,
        arguments=_arguments_model(func, tool_name, where),
        func=func,
        permission=permission,
        timeout=timeout,
        max_output=max_output,
    )


def _arguments_model(func: ToolFunc, name: str, where: str) -> type[BaseModel]:
    try:
        hints = get_type_hints(func, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ToolDefinitionError(f"{where}: cannot resolve its type hints: {exc}") from None
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise ToolDefinitionError(f"{where}: the first parameter must be the ToolContext")
    fields: dict[str, Any] = {}
    for param in params[1:]:
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ToolDefinitionError(f"{where}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise ToolDefinitionError(f"{where}: parameter {param.name!r} has no type annotation")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


@functools.cache
def _definition(name: str, description: str, arguments: type[BaseModel]) -> dict[str, Any]:
    schema = _untitled(arguments.model_json_schema())
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


def _untitled(schema: Any) -> Any:
    """The schema without pydantic's generated titles: tokens the model does not need."""
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}
        else:
            out[key] = _untitled(value)
    return out


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())
