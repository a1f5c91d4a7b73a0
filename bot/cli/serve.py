"""``run`` and ``chat``: the app and its adapters until a signal stops them.

The only CLI module that imports the app (and with it the LLM SDK, the conversation service and
the scheduler): the other commands never need them, so they start without that cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from bot.app import App
from bot.cli import collector
from bot.cli.adapters import load_adapter
from bot.config import Settings
from bot.doctor.adapters import check_adapter_settings
from bot.errors import ConfigError
from bot.platform.adapter import Adapter

__all__ = ["SHUTDOWN_GRACE", "serve"]

log = logging.getLogger(__name__)
SHUTDOWN_GRACE = 10.0  # seconds in-flight replies get after SIGTERM/SIGINT before cancellation


async def serve(settings: Settings, names: list[str]) -> int:
    factories = [load_adapter(name, settings.adapters) for name in names]
    for name in names:
        check_adapter_settings(name, settings)
    async with App(settings) as app:
        adapters: list[Adapter] = [factory(app.platform) for factory in factories]
        collector.settle()  # what serving needs is imported now (bot.cli.collector)
        loop = asyncio.get_running_loop()

        runs = [app.adapter_runs.start(adapter) for adapter in adapters]  # watched: /status
        stopping: set[asyncio.Task[None]] = set()
        signals = 0

        def force() -> None:
            log.warning("in-flight replies did not finish in time; cancelling them")
            for run in runs:
                run.cancel()

        def shut_down() -> None:
            nonlocal signals
            signals += 1
            if signals > 1:
                force()  # a second signal: stop now
                return
            log.info("shutting down: finishing in-flight replies (up to %.0fs)", SHUTDOWN_GRACE)
            loop.call_later(SHUTDOWN_GRACE, force)
            for adapter in adapters:
                task = loop.create_task(adapter.stop())
                stopping.add(task)
                task.add_done_callback(stopping.discard)

        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, shut_down)
        try:
            results = await asyncio.gather(*runs, return_exceptions=True)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
        failed = False
        for adapter, result in zip(adapters, results, strict=True):
            if isinstance(result, ConfigError):  # a sentence for the operator, no traceback
                log.error("adapter %s stopped: %s", adapter.name, result)
                failed = True
            elif isinstance(result, BaseException) and not isinstance(
                result, asyncio.CancelledError
            ):
                log.error("adapter %s stopped with an error", adapter.name, exc_info=result)
                failed = True
        return 1 if failed else 0
