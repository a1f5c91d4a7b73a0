"""What the fake servers share: serving on loopback (:func:`serve`), ``async with Fake() as fake``
running ``start()``/``stop()``, and the platform fakes' waits (``wait_until``, ``wait_idle``)
that tests drive the bot with."""

from __future__ import annotations

import asyncio
import errno
import sys
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Self

from aiohttp import web


async def serve(
    app: web.Application, host: str, port: int, *, shutdown_timeout: float, backlog: int = 128
) -> tuple[web.AppRunner, int, str]:
    """Serve ``app`` on ``host:port`` (0: any free port); returns the runner, the port bound and
    the host as it goes in a URL (``127.0.0.1`` for a wildcard, brackets for IPv6)."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, backlog=backlog).start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = int(runner.addresses[0][1])
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
    return runner, bound, f"[{shown}]" if ":" in shown else shown


def run_cli(serving: Coroutine[Any, Any, None], name: str, host: str, port: int) -> int:
    """A fake's command line: serve until Ctrl-C or SIGTERM (0); a port it cannot listen on
    (taken, say by a fake already running) is one line on stderr and 1, not a traceback."""
    try:
        asyncio.run(serving)
    except OSError as exc:
        taken = exc.errno == errno.EADDRINUSE
        why = "the port is taken (is one running already?)" if taken else str(exc)
        sys.stderr.write(f"{name}: cannot listen on {host}:{port}: {why}\n")
        return 1
    return 0


class FakeService:
    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


class WatchedFake(FakeService):
    """A fake that records the bot's requests and signals each change of its state.

    Subclasses provide ``_wait_change`` (sleep until the next change or ``seconds``),
    ``_in_flight`` (requests being handled), ``_last_request_at`` (``time.monotonic()`` of the
    newest request that counts as the bot being busy) and ``summary`` (for failure messages).
    """

    _in_flight: int

    async def _wait_change(self, seconds: float) -> None:
        raise NotImplementedError

    def _last_request_at(self) -> float:
        raise NotImplementedError

    def summary(self, last: int = 10) -> str:
        raise NotImplementedError

    # The waits take ``timeout`` (not ``asyncio.timeout``) so failures can say what happened.
    async def wait_until(
        self,
        predicate: Callable[[], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        what: str = "condition",
    ) -> None:
        """Wait until ``predicate()`` holds, re-checking on every change of the fake's state."""
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what}\n{self.summary()}"
                )
            await self._wait_change(min(remaining, 0.25))

    async def wait_idle(self, quiet: float = 0.2, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        """Wait until no request of the bot is running or arrived for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            since = time.monotonic() - self._last_request_at()
            if self._in_flight == 0 and since >= quiet:
                return
            if time.monotonic() >= deadline:
                raise AssertionError(f"the bot was not idle within {timeout}s\n{self.summary()}")
            await asyncio.sleep(min(max(quiet - since, 0.01), quiet))
