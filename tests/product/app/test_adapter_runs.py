"""What ``run`` knows of its adapters (the status page's rows): running while ``run()`` runs,
then stopped, or failed with its error, the awaiting caller still getting the exception."""

from __future__ import annotations

import asyncio

import pytest

from bot.platform.adapter_runs import AdapterRuns, AdapterState


class Adapter:
    def __init__(self, name: str, error: Exception | None = None) -> None:
        self.name = name
        self.error = error
        self.stopped = asyncio.Event()

    async def run(self) -> None:
        if self.error is not None:
            raise self.error
        await self.stopped.wait()

    async def stop(self) -> None:
        self.stopped.set()


async def test_running_then_stopped_or_failed() -> None:
    runs = AdapterRuns()
    discord = Adapter("discord")
    serving = runs.start(discord)
    failing = runs.start(Adapter("telegram", RuntimeError("Unauthorized")))
    hanging = runs.start(Adapter("console"))
    with pytest.raises(RuntimeError, match="Unauthorized"):
        await failing  # the caller still sees the failure
    await asyncio.sleep(0)
    assert [(r.name, r.state, r.error) for r in runs.runs()] == [
        ("discord", AdapterState.RUNNING, ""),
        ("telegram", AdapterState.FAILED, "RuntimeError: Unauthorized"),
        ("console", AdapterState.RUNNING, ""),
    ]
    await discord.stop()
    await serving
    hanging.cancel()  # a second signal cancels what did not finish
    await asyncio.gather(hanging, return_exceptions=True)
    assert [r.state for r in runs.runs()] == [
        AdapterState.STOPPED,
        AdapterState.FAILED,
        AdapterState.STOPPED,
    ]
