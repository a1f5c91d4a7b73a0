"""Deleting one person's data on request (``python -m bot history delete --user``)."""

from __future__ import annotations

import json
from typing import Protocol

from bot.values import UserDeletion

__all__ = ["Erasure", "sent_by"]

# Where the platforms' update payloads name a message's sender (Telegram: ``from``; Discord:
# ``author``); the inbox keeps those payloads as the platform sent them.
_SENDER_KEYS = ("from", "author", "user")


def sent_by(payload: str, user_id: str) -> bool:
    """Whether a stored platform update (JSON) holds something ``user_id`` sent."""
    try:
        update = json.loads(payload)
    except ValueError:
        return False
    stack = [update]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in _SENDER_KEYS:
                sender = item.get(key)
                if isinstance(sender, dict) and str(sender.get("id")) == user_id:
                    return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class Erasure(Protocol):
    """A data-subject request: forget what one person said, everywhere on one platform.

    A backend must provide, in one transaction, for ``user_id`` on ``platform``:

    - deleted: every turn they began (their message and the answer to it, search-index rows
      and vectors with them), every conversation of theirs (``<chat>:u:<user_id>``: private
      chats and per-user group conversations) whole, with its reset; their overheard messages;
      the memories they own (member and private scope) and every memory of their own
      conversations; the delivery records of the deleted answers; and the summary and window
      mark of every conversation that lost a turn (a summary may quote them; it is rebuilt).
    - blanked, kept: the platform updates of theirs in the inbox (the payload becomes ``{}``,
      the row still recognises a redelivery; an unfinished one is finished); their name on the
      usage ledger (the tokens were spent), on chat-scope memories they stated in a shared
      conversation (the group's facts stay), and in the audit trail (what an admin did stays).
    - Nobody else's rows change; other platforms are untouched. Returns the counts.
    """

    async def delete_user(self, platform: str, user_id: str) -> UserDeletion:
        """Delete (or anonymise) ``platform``'s ``user_id``'s data; returns what went."""
        ...
