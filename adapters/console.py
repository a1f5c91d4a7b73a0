"""The terminal chat: a REPL on stdin/stdout that streams the answer as it arrives.

Works interactively and with piped input (``printf 'hi\\n' | python -m bot chat``): each line
is one message, answered before the next is read; the session ends at EOF or ``/exit``.
Commands: ``/help``, ``/reset``, ``/clear``, ``/history``, ``/exit``. Python reads bytes that
are not UTF-8 on stdin as lone surrogates; each line is cleaned of them
(:mod:`bot.text`).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import sys
import threading
from typing import TextIO

from bot.context import ChatContext, ChatType
from bot.conversation.service import Done, ToolStarted
from bot.errors import UserFacingError
from bot.llm.client import TextDelta
from bot.platform.seam import Platform
from bot.text import clean_text

log = logging.getLogger(__name__)

_EXIT = frozenset({"/exit", "/quit"})
_EXIT_HELP = "/exit - Leave the chat (or /quit, or Ctrl-D)"


class ConsoleAdapter:
    name = "console"

    def __init__(
        self, platform: Platform, *, stdin: TextIO | None = None, stdout: TextIO | None = None
    ):
        self.platform = platform
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = self.stdin.isatty()
        user = _local_user()
        self.ctx = ChatContext(
            platform="console",
            chat_id="local",
            chat_type=ChatType.PRIVATE,
            user_id=user,
            user_name=user,
            is_admin=True,  # whoever holds the terminal owns the bot
            is_owner=True,
            chat_title="console",
        )
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._stopped = asyncio.Event()

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        """Messages the bot starts itself (reminders) are printed between prompts."""
        self._write(f"\n[{text}]\n" + ("you> " if self.interactive else ""))

    async def run(self) -> None:
        self.platform.outbound.register("console", self)
        self.platform.commands.add_help_note(_help_note)
        try:
            await self._run()
        finally:
            self.platform.outbound.unregister("console", self)

    async def _run(self) -> None:
        self._start_reader()
        if self.interactive:
            self._write("Parlour console. /help for commands, /exit to leave.\n")
        while not self._stopped.is_set():
            if self.interactive:
                self._write("you> ")
            line = await self._lines.get()
            if line is None:
                break
            text = line.strip()
            if not text:
                continue
            if text.lower() in _EXIT:
                break
            await self.handle(text)

    async def stop(self) -> None:
        self._stopped.set()
        self._lines.put_nowait(None)

    async def handle(self, text: str) -> None:
        """One line: a command or a message. Never raises; errors are shown and logged."""
        text = clean_text(text)
        try:
            if text.startswith("/"):
                name, _, args = text[1:].partition(" ")
                result = await self.platform.commands.handle(self.ctx, name, args)
                self._write(result.text + "\n")
                return
            await self._answer(text)
        except UserFacingError as exc:
            self._write(f"\n[{exc.chat_text}]\n")
        except Exception:
            log.exception("console message failed")
            self._write("\n[Something went wrong; see the log.]\n")

    async def _answer(self, text: str) -> None:
        started = False
        # one line at a time: the next is read once this answer is done, so no burst waits
        async for event in self.platform.conversation.stream(self.ctx, text, burst=False):
            if isinstance(event, TextDelta):
                if not started:
                    self._write("bot> " if self.interactive else "")
                    started = True
                self._write(event.text)
            elif isinstance(event, ToolStarted):
                self._write(f"\n[using {event.call.name}]\n")
            elif isinstance(event, Done):
                if not started:
                    self._write(("bot> " if self.interactive else "") + event.reply.text)
                if event.reply.truncated:
                    self._write(" [reply cut at the output limit]")
                self._write("\n")

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    def _start_reader(self) -> None:
        """Read stdin on a daemon thread: a blocked read must never hold up shutdown."""
        loop = asyncio.get_running_loop()

        def pump() -> None:
            try:
                for line in iter(self.stdin.readline, ""):
                    loop.call_soon_threadsafe(self._lines.put_nowait, line)
            except (OSError, ValueError):
                pass
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is already closed
                    loop.call_soon_threadsafe(self._lines.put_nowait, None)

        threading.Thread(target=pump, name="console-stdin", daemon=True).start()


def _help_note(ctx: ChatContext, admin: bool) -> str | None:
    """/help at the console also names the way out, which the console handles itself."""
    return _EXIT_HELP if ctx.platform == "console" else None


def _local_user() -> str:
    try:
        return clean_text(getpass.getuser()) or "you"
    except (KeyError, OSError):
        return "you"


def create_adapter(platform: Platform) -> ConsoleAdapter:
    return ConsoleAdapter(platform)
