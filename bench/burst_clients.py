"""Section 13's second floor: the bare loop's wire work through the real clients.

:class:`bench.burst_floor.BareLoop` makes its calls with plain aiohttp. Parlour must make them
through aiogram and the openai SDK (their typing, validation and errors are part of the product),
so this loop makes the same calls, in the same order and at the same moments, through an aiogram
``Bot`` (its default ``AiohttpSession``, as the Telegram adapter makes it) and an
``openai.AsyncOpenAI`` client on aiohttp (as ``bot.llm.endpoint`` makes it), used the way Parlour
uses them (aiogram's response models kept once built, the stream's chunks left as the JSON dicts
they arrive as), and nothing else: no dispatcher, no storage, no checks. The gap between the two
floors is what the clients cost; the gap between this one and Parlour is what Parlour costs.
"""

from __future__ import annotations

import asyncio
import html

import openai
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import LinkPreviewOptions, Message, Update
from openai import AsyncStream

from adapters.telegram.response_models import KeepResponseModels
from bench.burst_floor import ALLOWED_UPDATES, POLL_SECONDS, request_body
from bench.common import API_KEY
from bot.config.conversation import ChatSettings
from bot.conversation.preview import CURSOR

NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


class ClientsLoop:
    """``run`` until ``stop``; every update answered as :class:`BareLoop` answers it."""

    def __init__(self, api_server: str, token: str, llm_url: str) -> None:
        self.api_server = api_server
        self.token = token
        self.llm_url = llm_url
        self.system = ChatSettings().system_prompt
        self.failures: list[BaseException] = []
        self._stopped = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def stop(self) -> None:
        self._stopped.set()

    async def run(self) -> None:
        session = AiohttpSession(api=TelegramAPIServer.from_base(self.api_server))
        session.middleware(KeepResponseModels())
        bot = Bot(self.token, session=session)
        llm = openai.AsyncOpenAI(
            api_key=API_KEY,
            base_url=self.llm_url,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(),
        )
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await bot.delete_webhook(drop_pending_updates=False)
            offset: int | None = None
            while not self._stopped.is_set():
                poll = asyncio.ensure_future(
                    bot.get_updates(
                        offset=offset, timeout=POLL_SECONDS, allowed_updates=ALLOWED_UPDATES
                    )
                )
                await asyncio.wait({poll, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not poll.done():
                    poll.cancel()
                    await asyncio.gather(poll, return_exceptions=True)
                    break
                for update in poll.result():
                    offset = update.update_id + 1
                    task = asyncio.create_task(self._answer(bot, llm, update))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        finally:
            stopped.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await llm.close()
            await bot.session.close()

    async def _answer(self, bot: Bot, llm: openai.AsyncOpenAI, update: Update) -> None:
        try:
            assert update.message is not None and update.message.text is not None
            await self._reply(bot, llm, update.message.chat.id, update.message.text)
        except Exception as exc:  # counted by the fake as missing; kept for the report
            self.failures.append(exc)

    async def _reply(self, bot: Bot, llm: openai.AsyncOpenAI, chat_id: int, text: str) -> None:
        typing = asyncio.ensure_future(bot.send_chat_action(chat_id=chat_id, action="typing"))
        parts: list[str] = []
        shown: asyncio.Future[Message] | None = None
        body = request_body(self.system, text)
        stream = await llm.post(
            "/chat/completions",
            body=body,
            options={"security": {"bearer_auth": True}},
            cast_to=object,
            stream=True,
            stream_cls=AsyncStream[object],
        )
        async for chunk in stream:
            assert isinstance(chunk, dict)
            for choice in chunk.get("choices") or ():
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    parts.append(piece)
            if shown is None and parts:
                shown = asyncio.ensure_future(
                    bot.send_message(
                        chat_id=chat_id,
                        text="".join(parts) + CURSOR,
                        parse_mode=None,
                        link_preview_options=NO_PREVIEW,
                    )
                )
        if shown is None:
            raise RuntimeError(f"chat {chat_id}: the model sent no words")
        sent = await shown
        await bot.edit_message_text(
            chat_id=chat_id,
            message_id=sent.message_id,
            text=html.escape("".join(parts), quote=False),
            parse_mode="HTML",
            link_preview_options=NO_PREVIEW,
        )
        await typing


__all__ = ["ClientsLoop"]
