"""The protocol floor of section 13: a bare aiohttp loop doing a Telegram bot's wire work.

No Parlour, no aiogram, no openai SDK: one ``aiohttp`` session per server (no connection limit),
a long poll of ``getUpdates``, and for each update, in its own task at once: ``sendChatAction``
typing (not waited for), one streamed chat completion (``stream=true``, the server-sent events
read to ``[DONE]``), a ``sendMessage`` of the first words with the cursor as soon as they come
(the stream read on meanwhile), and one ``editMessageText`` with the whole answer, in HTML, at the
end. These are the calls the fake Bot API records for one Parlour turn (the bench checks: the
call counts are printed beside both), and the request body is Parlour's (the default system
prompt, the user's text, ``max_tokens`` and ``temperature`` as configured by default). Nothing is
stored, nothing is checked: the least a bot can do to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
from typing import Any

import aiohttp

from bench.common import API_KEY, MODEL
from bot.config.conversation import ChatSettings
from bot.conversation.preview import CURSOR

POLL_SECONDS = 5
ALLOWED_UPDATES = ["message", "edited_message"]
NO_PREVIEW = {"is_disabled": True}


def request_body(system: str, text: str) -> dict[str, Any]:
    """Parlour's streamed request for ``text`` at the defaults, as both floors send it."""
    return {
        "model": MODEL,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
        "max_tokens": 1024,
        "temperature": 0.7,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


class BareLoop:
    """``run`` until ``stop``; every update is answered as the module docstring says."""

    def __init__(self, api_server: str, token: str, llm_url: str) -> None:
        self.api = f"{api_server}/bot{token}"
        self.completions = f"{llm_url}/chat/completions"
        self.system = ChatSettings().system_prompt
        self.failures: list[BaseException] = []
        self._stopped = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._tg: aiohttp.ClientSession | None = None
        self._llm: aiohttp.ClientSession | None = None

    async def stop(self) -> None:
        self._stopped.set()

    async def run(self) -> None:
        unlimited = aiohttp.TCPConnector  # one connection per concurrent request, like the SDKs
        async with (
            aiohttp.ClientSession(connector=unlimited(limit=0)) as self._tg,
            aiohttp.ClientSession(
                connector=unlimited(limit=0), headers={"Authorization": f"Bearer {API_KEY}"}
            ) as self._llm,
        ):
            await self._call("deleteWebhook", drop_pending_updates=False)
            stopped = asyncio.ensure_future(self._stopped.wait())
            offset: int | None = None
            try:
                while not self._stopped.is_set():
                    poll = asyncio.ensure_future(
                        self._call(
                            "getUpdates",
                            offset=offset,
                            timeout=POLL_SECONDS,
                            allowed_updates=ALLOWED_UPDATES,
                        )
                    )
                    await asyncio.wait({poll, stopped}, return_when=asyncio.FIRST_COMPLETED)
                    if not poll.done():
                        poll.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await poll
                        break
                    for update in poll.result():
                        offset = int(update["update_id"]) + 1
                        task = asyncio.create_task(self._answer(update))
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
            finally:
                stopped.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _call(self, method: str, **params: Any) -> Any:
        assert self._tg is not None
        body = {k: v for k, v in params.items() if v is not None}
        async with self._tg.post(f"{self.api}/{method}", json=body) as response:
            answer = await response.json()
        if not answer.get("ok"):
            raise RuntimeError(f"{method}: {answer.get('description')}")
        return answer["result"]

    async def _answer(self, update: dict[str, Any]) -> None:
        try:
            message = update["message"]
            await self._reply(int(message["chat"]["id"]), str(message["text"]))
        except Exception as exc:  # counted by the fake as missing; kept for the report
            self.failures.append(exc)

    async def _reply(self, chat_id: int, text: str) -> None:
        assert self._llm is not None
        typing = asyncio.ensure_future(
            self._call("sendChatAction", chat_id=chat_id, action="typing")
        )
        body = request_body(self.system, text)
        parts: list[str] = []
        shown: asyncio.Future[Any] | None = None
        async with self._llm.post(self.completions, json=body) as response:
            response.raise_for_status()
            async for line in response.content:
                if not line.startswith(b"data: "):
                    continue
                data = line[6:].strip()
                if data == b"[DONE]":
                    break
                for choice in json.loads(data).get("choices") or ():
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        parts.append(piece)
                if shown is None and parts:
                    shown = asyncio.ensure_future(
                        self._call(
                            "sendMessage",
                            chat_id=chat_id,
                            text="".join(parts) + CURSOR,
                            link_preview_options=NO_PREVIEW,
                        )
                    )
        if shown is None:
            raise RuntimeError(f"chat {chat_id}: the model sent no words")
        sent = await shown
        await self._call(
            "editMessageText",
            chat_id=chat_id,
            message_id=sent["message_id"],
            text=html.escape("".join(parts), quote=False),
            parse_mode="HTML",
            link_preview_options=NO_PREVIEW,
        )
        await typing
