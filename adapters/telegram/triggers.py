"""Whether a Telegram message is for the bot: the trigger rules, as one pure function.

Private chats always answer. In groups the bot answers an @mention, a reply to its own message,
``/ask <text>`` or a configured keyword (each switchable per chat); anything else is overheard
(kept as bounded context) or ignored, unless ambient mode answers it (the decision says it is
``unaddressed``; :mod:`bot.conversation.ambient`). Other bots are never answered, so two bots
cannot loop.
"""

from __future__ import annotations

from collections.abc import Collection

from adapters.telegram.normalise import Incoming
from adapters.telegram.settings import GroupTrigger
from bot.conversation.triggers import IGNORE, Action, Decision, with_quote

__all__ = ["Action", "Decision", "decide"]


def decide(incoming: Incoming, trigger: GroupTrigger, commands: Collection[str]) -> Decision:
    if incoming.from_bot or incoming.for_other_bot:
        return IGNORE
    private = incoming.ctx.is_private
    if incoming.command is not None:
        return _command(incoming, trigger, commands, private)
    if private or _addressed(incoming, trigger):
        return Decision(Action.ANSWER, _with_quote(incoming, incoming.text))
    # ambient mode may answer it (the adapter asks with ``incoming.text``); not a mention or a
    # reply the chat's triggers switched off
    unaddressed = bool(incoming.text) and not (incoming.mentioned or incoming.reply_to_bot)
    if trigger.keep_context and incoming.text:
        return Decision(Action.OVERHEAR, incoming.text, unaddressed=unaddressed)
    return Decision(Action.IGNORE, unaddressed=unaddressed) if unaddressed else IGNORE


def _command(
    incoming: Incoming, trigger: GroupTrigger, commands: Collection[str], private: bool
) -> Decision:
    name = incoming.command or ""
    if name == "ask":
        if not (private or trigger.ask_command):
            return IGNORE
        return Decision(Action.ANSWER, _with_quote(incoming, incoming.command_args))
    if name == "start" and private:
        return Decision(Action.COMMAND, "", "help")
    if name in commands or private:
        return Decision(Action.COMMAND, incoming.command_args, name)
    return IGNORE  # a group command meant for some other bot


def _addressed(incoming: Incoming, trigger: GroupTrigger) -> bool:
    if trigger.mention and incoming.mentioned:
        return True
    if trigger.reply and incoming.reply_to_bot:
        return True
    text = incoming.text.casefold()
    return any(word.casefold() in text for word in trigger.keywords if word.strip())


def _with_quote(incoming: Incoming, text: str) -> str:
    return with_quote(text, incoming.quoted, incoming.quoted_author)
