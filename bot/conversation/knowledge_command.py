"""``/knowledge`` (admins): the bases this chat searches, binding and unbinding them, and a
document sent to the chat with ``/knowledge add BASE`` as its caption.

Who may do what is :class:`~bot.conversation.knowledge.Knowledge`'s rule (bind: bot admins any
base, chat admins ``shared`` ones; add: bot admins any base, chat admins a base bound here that
takes ``chat_uploads``). An upload is checked before its file is downloaded: a member's
document, or one over ``knowledge.max_file_bytes``, costs no download.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from bot.context import ChatContext
from bot.conversation.commands import Commands
from bot.conversation.knowledge import Knowledge
from bot.errors import UserFacingError
from bot.knowledge.formats import DocumentError, check_size
from bot.knowledge.library import add_document
from bot.plugins.commands import CommandInfo, CommandResult
from bot.text import counted

__all__ = ["KNOWLEDGE_COMMAND", "KnowledgeDesk", "add_knowledge_command", "document_source"]

log = logging.getLogger(__name__)

KNOWLEDGE_COMMAND = CommandInfo(
    "knowledge",
    "Knowledge bases searched here (/knowledge bind NAME, unbind NAME, add NAME with a file)",
    admin_only=True,
)
USAGE = (
    "/knowledge - the bases searched here\n"
    "/knowledge bind NAME - search a base here\n"
    "/knowledge unbind NAME - stop searching it here\n"
    "/knowledge add NAME - as the caption of a document: add it to the base"
)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]+")


def document_source(filename: str) -> str:
    """A sent file's name as the source it is known by: no folders, no control characters."""
    name = _UNSAFE.sub("_", filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]).strip(" .")
    return name[:200] or "document.txt"


class KnowledgeDesk:
    """The chat's side of knowledge bases: what ``/knowledge`` and uploads do."""

    def __init__(
        self, knowledge: Knowledge, admit: Callable[[ChatContext], Awaitable[None]]
    ) -> None:
        self.knowledge = knowledge
        self.settings = knowledge.settings
        self.admit = admit  # access lists and the message rate, as for every command

    async def handle(self, ctx: ChatContext, args: str) -> CommandResult:
        verb, _, rest = args.partition(" ")
        name = rest.strip().lower()
        if not verb:
            return CommandResult(await self.describe(ctx), private=True)
        if verb == "bind" and name:
            return await self.bind(ctx, name)
        if verb == "unbind" and name:
            return await self.unbind(ctx, name)
        if verb == "add":
            return CommandResult(
                "Send the document itself with the caption /knowledge add NAME (Telegram,"
                " Discord), or add files from the shell: python -m bot knowledge add NAME PATH",
                ok=False,
                private=True,
            )
        return CommandResult(USAGE, ok=False, private=True)

    async def describe(self, ctx: ChatContext) -> str:
        declared = self.settings.knowledge.bases
        if not declared:
            return "No knowledge bases are set up (knowledge.bases in the config)."
        preset = set(self.knowledge.preset_bases(ctx))
        searched = await self.knowledge.bases(ctx)
        lines = [
            "Knowledge bases searched here:" if searched else "No knowledge base is searched here."
        ]
        lines += [f"- {b}" + (" (set in the config)" if b in preset else "") for b in searched]
        bindable = [b for b in declared if b not in searched and self.knowledge.may_bind(ctx, b)]
        if bindable:
            lines += ["", "You may bind: " + ", ".join(bindable)]
        return "\n".join(lines)

    async def bind(self, ctx: ChatContext, base: str) -> CommandResult:
        if base not in self.settings.knowledge.bases:
            return CommandResult(self._unknown(base), ok=False, private=True)
        if not self.knowledge.may_bind(ctx, base):
            return CommandResult(
                f"Only the bot's admins can bind {base} (it is not a shared base).",
                ok=False,
                private=True,
            )
        added = await self.knowledge.store.bind_base(ctx.chat_key, base, ctx.user_id)
        log.info("knowledge base %s bound chat=%s by=%s", base, ctx.chat_key, ctx.user_id)
        said = "now searched here" if added else "was already searched here"
        return CommandResult(f"Knowledge base {base} {said}.")

    async def unbind(self, ctx: ChatContext, base: str) -> CommandResult:
        if base in self.knowledge.preset_bases(ctx):
            return CommandResult(
                f"{base} is bound to this chat in the config (chats:); it stays.",
                ok=False,
                private=True,
            )
        if not await self.knowledge.store.unbind_base(ctx.chat_key, base):
            return CommandResult(f"{base} is not bound here.", ok=False, private=True)
        log.info("knowledge base %s unbound chat=%s by=%s", base, ctx.chat_key, ctx.user_id)
        return CommandResult(f"Knowledge base {base} is no longer searched here.")

    async def upload(
        self,
        ctx: ChatContext,
        base: str,
        filename: str,
        size: int | None,
        fetch: Callable[[], Awaitable[bytes]],
    ) -> CommandResult:
        """Add a document sent to the chat; ``fetch`` downloads it once it may be added."""
        try:
            await self.admit(ctx)  # a chat the access lists deny, or a flood: no reply costs
        except UserFacingError as exc:
            return CommandResult(exc.chat_text, ok=False, private=True, notify=exc.notify)
        base = base.strip().lower()
        if base not in self.settings.knowledge.bases:
            return CommandResult(self._unknown(base), ok=False, private=True)
        if not self.knowledge.may_upload(ctx, base):
            if not self.knowledge.admins.is_admin(ctx):
                text = "Only this chat's admins can add documents to its knowledge bases."
            else:
                text = (
                    f"{base} does not take documents from this chat (the bot's admins decide"
                    " which chats may add to a base)."
                )
            log.info(
                "knowledge upload refused base=%s chat=%s user=%s", base, ctx.chat_key, ctx.user_id
            )
            return CommandResult(text, ok=False, private=True)
        source = document_source(filename)
        try:
            if size is not None:
                check_size(source, size, self.settings.knowledge.max_file_bytes)
            data = await fetch()
            result = await add_document(
                self.knowledge.store, self.settings, base=base, source=source, data=data,
                added_by=f"{ctx.platform}:{ctx.user_id}", count=self.knowledge.counter.count_text,
                may_replace=lambda added_by: self.knowledge.may_replace(ctx, added_by),
            )  # fmt: skip
        except DocumentError as refused:
            return CommandResult(f"Refused: {refused}. {base} is unchanged.", ok=False)
        document = result.document
        if result.outcome != "unchanged":
            self.knowledge.added()
        log.info(
            "knowledge document %s base=%s outcome=%s chat=%s by=%s",
            source, base, result.outcome, ctx.chat_key, ctx.user_id,
        )  # fmt: skip
        if result.outcome == "unchanged":
            return CommandResult(f"{source} is already in {base}, unchanged.")
        return CommandResult(
            f"{source} {result.outcome} in {base}: {counted(document.chunks, 'passage')}."
        )

    def _unknown(self, base: str) -> str:
        names = ", ".join(self.settings.knowledge.bases) or "none are set up"
        return f"There is no knowledge base {base!r}. Bases: {names}."


def add_knowledge_command(commands: Commands, desk: KnowledgeDesk) -> None:
    """Register ``/knowledge`` (only when config declares a base)."""
    commands.register(KNOWLEDGE_COMMAND, desk.handle)
