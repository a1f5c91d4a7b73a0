"""Whose conversation an HTTP chat request is, and who may act as an admin in it.

The ``user`` field (or ``X-Parlour-User``) is free text the client chooses, so it can never
name a conversation or an admin on its own:

* **Conversations.** The chat id is ``<namespace>:<user>``: the namespace is the calling
  token's name (or the shared one ``http.namespaces`` gives it), so token ``partner`` sending
  ``"user": "cust-1"`` reaches ``http:partner:cust-1`` and never ``website``'s ``cust-1``. A user
  may not contain ``:`` (:mod:`adapters.http.openai.wire`), so the split is unambiguous, and
  keys stored before namespaces (``http:<user>``, no second colon) can never be reached by
  accident. ``http.legacy_namespace`` hands those old keys to one namespace explicitly.
* **Admins.** A caller is a bot admin only when its token is listed in
  ``http.bot_admin_tokens``; ``admins:`` entries for ``http`` are refused by the config
  (:data:`bot.config.CLIENT_NAMED_PLATFORMS`), because no one can verify them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from adapters.http.auth import Principal
from adapters.http.settings import RESERVED_NAME, HTTPSettings
from bot.context import ChatContext, ChatType
from bot.values import AuditEntry

__all__ = [
    "PLATFORM",
    "Actor",
    "ActorKind",
    "Owner",
    "actor_of",
    "chat_context",
    "chat_id_for",
    "owner_of",
    "token_actor",
]

PLATFORM = "http"


@dataclass(frozen=True, slots=True)
class Owner:
    """Which token's conversations an ``http`` chat is (for the admin API and dashboard)."""

    namespace: str | None  # None: stored before namespaces, and no legacy_namespace set
    user: str
    legacy: bool  # an old ``http:<user>`` key


def chat_id_for(settings: HTTPSettings, token_name: str, user: str) -> str:
    """The chat id a token's caller ``user`` talks in (see the module doc)."""
    namespace = settings.namespace(token_name)
    if settings.legacy_namespace is not None and namespace == settings.legacy_namespace:
        return user
    return f"{namespace}:{user}"


def chat_context(settings: HTTPSettings, principal: Principal, user: str) -> ChatContext:
    """One person's private chat with the bot on platform ``http``, in the token's namespace."""
    chat_id = chat_id_for(settings, principal.name, user)
    return ChatContext(
        platform=PLATFORM,
        chat_id=chat_id,
        chat_type=ChatType.PRIVATE,
        user_id=chat_id,  # a person is only known within the token that names them
        user_name=user,
        chat_title=user,  # the chat directory (``/api/chats``, the dashboard) names it
        is_owner=principal.name in settings.bot_admin_tokens,
    )


def owner_of(settings: HTTPSettings, chat_id: str) -> Owner:
    """The token namespace an ``http`` chat id belongs to."""
    namespace, colon, user = chat_id.partition(":")
    if colon:
        return Owner(namespace, user, legacy=False)
    return Owner(settings.legacy_namespace, chat_id, legacy=True)


def token_actor(actor_id: str) -> str | None:
    """The token's name when an audit entry was made over HTTP by a token (``http:<name>``),
    else None. A chat user's id never has this form: on ``http`` it is ``<namespace>:<user>``
    and no namespace may be called ``http``; elsewhere it has no ``http:`` prefix."""
    prefix, colon, name = actor_id.partition(":")
    if prefix == RESERVED_NAME and colon and name and ":" not in name:
        return name
    return None


class ActorKind(StrEnum):
    TOKEN = "token"  # the admin API or the dashboard, by a token's name
    USER = "user"  # a person in the chat, by their platform id


@dataclass(frozen=True, slots=True)
class Actor:
    """Who made an audited change, as the dashboard and the admin API show it: a token is
    marked as one, a person by platform and id (a display name is theirs to choose, so a
    Telegram user named "http:ops" never reads as the token ``ops``)."""

    kind: ActorKind
    platform: str
    id: str  # the token's name, or the person's id on ``platform``
    name: str  # the display name at the time ('' for a token, or erased)


def actor_of(entry: AuditEntry) -> Actor:
    token = token_actor(entry.actor_id)
    if token is not None:
        return Actor(ActorKind.TOKEN, PLATFORM, token, "")
    platform = entry.chat_key.partition(":")[0]  # a person acts in their own chat
    return Actor(ActorKind.USER, platform, entry.actor_id, entry.actor_name)
