"""Loading plugins by name, with their settings validated first and a clean rollback.

A plugin is a module (``plugins.clock``, ``my_package.weather``) or the name of an installed
package's ``parlour.plugins`` entry point. It may define ``Settings`` (a pydantic model: the
``settings:`` given in config are validated against it *before* setup) and must define
``setup(plugin)``, sync or async, where it adds tools, commands and job handlers through the
:class:`Plugin` handle; ``teardown(plugin)`` is optional. If anything fails, everything that
plugin registered is taken back and the bot starts without it (or refuses to start when the
plugin is marked ``required``).

The built-in plugins (``plugins.calculator``, ``plugins.clock``, ``plugins.memory``,
``plugins.reminders``, ``plugins.web``) load from Parlour's own ``plugins`` package whatever
the working directory holds: a user's own ``plugins/`` folder does not hide them, and its modules
still load as ``plugins.<name>`` after the built-ins (a module named like a built-in is not
reached).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import logging
import pkgutil
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from bot.config import PluginEntry, describe_errors
from bot.context import ChatContext, Scope
from bot.errors import ParlourError
from bot.platform.delivery import Outbound
from bot.plugins.commands import CommandInfo, CommandRegistry, CommandResult
from bot.plugins.context import KeyValueBackend, PluginStore, ToolContext
from bot.plugins.declare import ToolFunc, ToolSpec, spec_of
from bot.plugins.registry import ToolRegistry

if TYPE_CHECKING:
    from bot.memory.store import MemoryStore
    from bot.scheduling.scheduler import CancelHook, Scheduler
    from bot.scheduling.scheduler import Handler as JobHandler

log = logging.getLogger(__name__)

ChatMovedHook = Callable[[str, str], Awaitable[None]]
"""``on_chat_moved(old_chat_key, new_chat_key)``: a chat changed its id; move its records."""

CHAT_MOVED_SECONDS = 30.0  # one plugin's on_chat_moved hook, at most
ENTRY_POINT_GROUP = "parlour.plugins"
BUILTIN_PACKAGE = "plugins"
BUILTIN_DIR = Path(__file__).resolve().parents[2] / BUILTIN_PACKAGE  # installed beside ``bot``


class PluginError(ParlourError):
    """A plugin could not be loaded; the message names it and the cause."""


@dataclass
class Plugin:
    """The handle a plugin's ``setup`` receives. Everything added through it is undone together."""

    name: str
    settings: BaseModel | None
    store: PluginStore
    outbound: Outbound
    scheduler: Scheduler | None
    memories: MemoryStore | None
    _registry: ToolRegistry
    _commands: CommandRegistry
    _conversation_of: Callable[[ChatContext], str] | None = None
    tools: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    job_kinds: list[str] = field(default_factory=list)
    chat_moved_hooks: list[ChatMovedHook] = field(default_factory=list)
    module: str = ""  # as named in config plugins: (what a chats: preset's plugins list names)

    def add_tool(self, func: ToolFunc) -> ToolSpec:
        spec = spec_of(func)
        self._registry.add(spec, self._tool_context, plugin=self.module or self.name)
        self.tools.append(spec.name)
        return spec

    def add_command(
        self,
        name: str,
        description: str,
        handler: Callable[[ChatContext, str], Awaitable[CommandResult]],
        *,
        admin_only: bool = False,
        admin_aware: bool = False,
    ) -> None:
        """A chat command (``/name args``); listed in /help and the platforms' menus.

        ``admin_only``: only the chat's admins may run it. ``admin_aware``: anyone may, but the
        handler asks :meth:`is_admin` (adapters then look the caller's admin status up for it).
        """

        info = CommandInfo(
            name,
            description,
            admin_only=admin_only,
            admin_aware=admin_aware,
            plugin=self.module or self.name,
        )
        self._commands.register(info, handler)
        self.commands.append(name.lower())

    def is_admin(self, ctx: ChatContext) -> bool:
        """A chat admin, by the one policy (``bot.guardrails.admins``): platform admin or bot admin.

        Reliable in a command's handler only if it was added ``admin_only`` or ``admin_aware``.
        """
        return self._registry.is_admin(ctx)

    def on_job(
        self, kind: str, handler: JobHandler, *, on_cancel: CancelHook | None = None
    ) -> None:
        """Run ``handler(job_id, payload)`` for scheduled jobs of ``kind``; ``on_cancel(job_id,
        payload)`` when one is withdrawn from outside (the admin API cancels a reminder)."""
        if self.scheduler is None:
            raise PluginError(f"plugin {self.name}: no scheduler is running")
        self.scheduler.register(kind, handler, on_cancel=on_cancel)
        self.job_kinds.append(kind)

    def on_chat_moved(self, hook: ChatMovedHook) -> None:
        """Run ``hook(old_chat_key, new_chat_key)`` when a chat changes its id (a Telegram
        group that became a supergroup), after its history and settings moved: a plugin that
        keeps records by chat (the reminders plugin) moves them. It may run twice for one move
        (Telegram tells it twice): the second time there is nothing left to move."""
        self.chat_moved_hooks.append(hook)

    def conversation_key(self, ctx: ChatContext) -> str:
        """The conversation ``ctx`` belongs to under its chat's scope (what a memory is
        kept in, what ``/reset`` resets); without a chat service, the chat's shared one."""
        if self._conversation_of is None:
            return ctx.conversation_key(Scope.CHAT)
        return self._conversation_of(ctx)

    def _tool_context(self, spec: ToolSpec, ctx: ChatContext) -> ToolContext:
        return ToolContext(
            chat=ctx,
            is_admin=self._registry.is_admin(ctx),
            plugin=self.name,
            store=self.store,
            outbound=self.outbound,
            scheduler=self.scheduler,
            settings=self.settings,
            memories=self.memories,
            conversation_key=self.conversation_key(ctx),
        )

    def rollback(self) -> None:
        """Undo everything this plugin added (its setup failed, or it is being unloaded)."""
        for name in self.tools:
            self._registry.remove(name)
        for name in self.commands:
            self._commands.unregister(name)
        if self.scheduler is not None:
            for kind in self.job_kinds:
                self.scheduler.unregister(kind)
        self.chat_moved_hooks.clear()


@dataclass
class _Loaded:
    plugin: Plugin
    module: ModuleType


class PluginManager:
    def __init__(
        self,
        registry: ToolRegistry,
        commands: CommandRegistry,
        kv: KeyValueBackend,
        outbound: Outbound,
        scheduler: Scheduler | None,
        *,
        memories: MemoryStore | None = None,
        conversation_of: Callable[[ChatContext], str] | None = None,
    ) -> None:
        self.memories = memories
        self.conversation_of = conversation_of  # the chat service's conversation_key
        self.registry = registry
        self.commands = commands
        self.kv = kv
        self.outbound = outbound
        self.scheduler = scheduler
        self.loaded: list[_Loaded] = []
        self.failed: dict[str, str] = {}

    async def load_all(self, entries: tuple[PluginEntry, ...], *, required: bool = False) -> None:
        for entry in entries:
            try:
                await self.load(entry)
            except PluginError as exc:
                if required or entry.required:
                    raise
                self.failed[entry.module] = str(exc)
                log.error("%s; starting without it", exc)

    async def load(self, entry: PluginEntry) -> Plugin:
        module = _import(entry.module)
        name = module.__name__.rsplit(".", 1)[-1]
        if any(loaded.plugin.name == name for loaded in self.loaded):
            raise PluginError(f"plugin {entry.module}: a plugin named {name!r} is already loaded")
        setup = getattr(module, "setup", None)
        if not callable(setup):
            raise PluginError(f"plugin {entry.module}: the module has no setup(plugin) function")
        plugin = Plugin(
            name=name,
            settings=_settings(module, entry),
            store=PluginStore(self.kv, name),
            outbound=self.outbound,
            scheduler=self.scheduler,
            memories=self.memories,
            _registry=self.registry,
            _commands=self.commands,
            _conversation_of=self.conversation_of,
            module=entry.module,
        )
        try:
            await _maybe_await(setup(plugin))
        except Exception as exc:
            plugin.rollback()
            raise PluginError(
                f"plugin {entry.module} failed in setup: {type(exc).__name__}: {exc}"
            ) from exc
        self.loaded.append(_Loaded(plugin, module))
        log.info(
            "plugin %s loaded: tools=%s commands=%s",
            name,
            ",".join(plugin.tools) or "-",
            ",".join(plugin.commands) or "-",
        )
        return plugin

    async def chat_moved(self, old_chat_key: str, new_chat_key: str) -> None:
        """Tell every loaded plugin that asked (:meth:`Plugin.on_chat_moved`); one that fails
        is logged, and the others are still told. Each has :data:`CHAT_MOVED_SECONDS`: the new
        chat's messages wait for the move."""
        for loaded in list(self.loaded):
            for hook in loaded.plugin.chat_moved_hooks:
                try:
                    async with asyncio.timeout(CHAT_MOVED_SECONDS):
                        await hook(old_chat_key, new_chat_key)
                except Exception:
                    log.exception(
                        "plugin %s failed to move chat %s to %s",
                        loaded.plugin.name, old_chat_key, new_chat_key,
                    )  # fmt: skip

    async def teardown_all(self) -> None:
        for loaded in reversed(self.loaded):
            teardown = getattr(loaded.module, "teardown", None)
            if callable(teardown):
                try:
                    await _maybe_await(teardown(loaded.plugin))
                except Exception:
                    log.exception("plugin %s failed in teardown", loaded.plugin.name)
        self.loaded.clear()


def _import(name: str) -> ModuleType:
    target = name
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name == name:
            target = point.value.split(":", 1)[0]
            break
    try:
        if target.split(".", 1)[0] == BUILTIN_PACKAGE:
            builtin_package()
        return importlib.import_module(target)
    except Exception as exc:
        raise PluginError(f"plugin {name} cannot be imported: {type(exc).__name__}: {exc}") from exc


def builtin_package() -> ModuleType:
    """Parlour's ``plugins`` package, in ``sys.modules`` under that name.

    ``python -m bot`` searches the working directory first, so a user's ``plugins/`` folder would
    otherwise be imported in its place. The package searches the built-in folder first, then
    every other ``plugins`` folder on ``sys.path``.
    """
    package = sys.modules.get(BUILTIN_PACKAGE)
    builtin = str(BUILTIN_DIR)
    if package is None or builtin not in list(getattr(package, "__path__", [])):
        spec = importlib.util.spec_from_file_location(
            BUILTIN_PACKAGE, BUILTIN_DIR / "__init__.py", submodule_search_locations=[builtin]
        )
        if spec is None or spec.loader is None:  # pragma: no cover - the file ships with bot
            raise ImportError(f"no built-in plugins at {BUILTIN_DIR}")
        package = importlib.util.module_from_spec(spec)
        sys.modules[BUILTIN_PACKAGE] = package
        spec.loader.exec_module(package)
    others = pkgutil.extend_path([builtin], BUILTIN_PACKAGE)
    package.__path__ = list(dict.fromkeys([*package.__path__, *others]))
    return package


def _settings(module: ModuleType, entry: PluginEntry) -> BaseModel | None:
    model = getattr(module, "Settings", None)
    if model is None:
        if entry.settings:
            raise PluginError(
                f"plugin {entry.module} takes no settings, got {sorted(entry.settings)}"
            )
        return None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PluginError(f"plugin {entry.module}: Settings must be a pydantic model")
    unknown = sorted(set(entry.settings) - set(model.model_fields))
    if unknown:
        raise PluginError(
            f"plugin {entry.module} settings: unknown {', '.join(unknown)}"
            f" (known: {', '.join(model.model_fields) or 'none'})"
        )
    try:
        return model.model_validate(entry.settings)
    except ValidationError as exc:
        problems = "; ".join(describe_errors(exc, top="settings"))  # never echoes a value
        raise PluginError(f"plugin {entry.module} settings: {problems}") from None


def validated_settings(entry: PluginEntry) -> BaseModel | None:
    """Import the plugin and check its ``settings:`` without setting it up (``check-config``)."""
    return _settings(_import(entry.module), entry)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


__all__ = ["ENTRY_POINT_GROUP", "Plugin", "PluginError", "PluginManager", "validated_settings"]
