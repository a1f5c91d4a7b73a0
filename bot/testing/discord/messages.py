"""Messages in the fake Discord: users writing (``FakeDiscord.message``) and the bot's own
messages created, edited and deleted through REST or interactions, with Discord's checks.

One code path builds every bot message (channel send, interaction response, followup), so
the 2000-character limit, the empty-message 50006, ``allowed_mentions`` (what really pings)
and ``message_reference`` behave the same everywhere, as on Discord. The bot's own messages
are echoed as MESSAGE_CREATE like Discord does, so bots must ignore themselves; with several
bot applications (``add_bot``), a bot's message reaches every other bot that can see the
channel too, with ``author.bot`` true.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from bot.testing.discord.cdn import IS_VOICE_MESSAGE, MAX_ATTACHMENTS, Upload, voice_upload
from bot.testing.discord.message_checks import (
    EMPTY_MESSAGE,
    EPHEMERAL,
    LOADING,
    MAX_CONTENT,
    SENDABLE_FLAGS,
    content_of,
    validate_message,
)
from bot.testing.discord.payloads import (
    allowed_mentions_filter,
    attachment_json,
    mentioned_ids,
    message_base,
    partial_member,
    with_member,
)
from bot.testing.discord.permissions import Perm
from bot.testing.discord.state import DiscordState, GuildState, Intents, Interaction
from bot.testing.discord.wire import (
    DiscordError,
    JSONDict,
    field_error,
    invalid_form,
    iso,
    unknown,
)

__all__ = ["EMPTY_MESSAGE", "EPHEMERAL", "LOADING", "MAX_CONTENT", "DiscordMessages"]


class DiscordMessages(DiscordState):
    """Message creation, editing and deletion on top of the world (see the module doc)."""

    def message(
        self,
        channel: JSONDict,
        author: JSONDict,
        content: str,
        *,
        mentions_bot: bool | None = None,
        reply_to: JSONDict | None = None,
        embeds: list[JSONDict] | None = None,
        attachments: Sequence[Upload] = (),
        flags: int = 0,
    ) -> JSONDict:
        """``author`` writes ``content`` in ``channel``: dispatches MESSAGE_CREATE, returns it.

        In a guild the author becomes a member if it is not one. ``mentions_bot`` None
        detects ``<@bot id>`` (and a reply to the bot, which pings it); True/False force it.
        Without the MESSAGE_CONTENT intent the bot receives ``content`` "" (and no
        attachments) unless it is mentioned or the message is a DM, as on Discord.
        ``attachments``: files uploaded with it (at most 10), served by the fake's CDN.
        """
        if len(attachments) > MAX_ATTACHMENTS:
            raise ValueError(f"a message carries at most {MAX_ATTACHMENTS} attachments")
        stored = self._known_channel(int(channel["id"]))
        author_id = int(author["id"])
        self.users.setdefault(author_id, author)
        guild = self._guild_of(stored)
        if guild is not None and author_id not in guild.members:
            self.member(guild.guild, author)
        target = None
        if reply_to is not None:
            target = self._messages.get(int(reply_to["id"]))
            if target is None:
                raise ValueError(f"reply_to: unknown message {reply_to['id']}")
        users, roles, everyone = mentioned_ids(content)
        if target is not None and int(target["author"]["id"]) not in users:
            users.append(int(target["author"]["id"]))
        if mentions_bot is True and self.application_id not in users:
            users.append(self.application_id)
        elif mentions_bot is False and self.application_id in users:
            users.remove(self.application_id)
        if everyone and guild is not None:
            everyone = bool(
                self.permissions_in(int(stored["id"]), author_id) & Perm.MENTION_EVERYONE
            )
        message = message_base(self._ids.next(), int(stored["id"]), author, content, flags=flags)
        message["embeds"] = copy.deepcopy(embeds or [])
        message["attachments"] = [
            self.cdn.publish(int(stored["id"]), self._ids.next(), upload) for upload in attachments
        ]
        self._fill_mentions(message, guild, users, roles, everyone)
        if target is not None:
            self._attach_reference(message, target)
        message["guild_id"] = None if guild is None else str(guild.id)
        self._store(message, stored)
        self._dispatch_message("MESSAGE_CREATE", message)
        return message

    def voice_message(
        self,
        channel: JSONDict,
        author: JSONDict,
        audio: bytes | Upload,
        *,
        duration_secs: float = 3.0,
        reply_to: JSONDict | None = None,
    ) -> JSONDict:
        """``author`` records a voice message: no text, one ``audio/ogg`` attachment with
        ``duration_secs`` and a waveform, the IS_VOICE_MESSAGE flag (as Discord's clients send
        it). In a server it reaches the bot as addressed only as a reply to it (the reply pings).
        """
        upload = audio if isinstance(audio, Upload) else voice_upload(audio, duration_secs)
        if upload.duration_secs is None:
            raise ValueError("a voice message's audio needs duration_secs and a waveform")
        return self.message(
            channel, author, "", reply_to=reply_to, attachments=[upload], flags=IS_VOICE_MESSAGE
        )

    # ----------------------------------------------------------------- bot messages

    def _create_bot_message(
        self,
        channel: JSONDict,
        body: JSONDict,
        *,
        files: list[tuple[str, int]] | None = None,
        interaction: Interaction | None = None,
        message_type: int = 0,
        extra_flags: int = 0,
    ) -> JSONDict:
        """Validate ``body`` like Discord and store + echo the bot's new message.

        ``extra_flags`` with LOADING makes the deferred "thinking" placeholder (no checks).
        """
        files = files or []
        allowed_flags = SENDABLE_FLAGS | (EPHEMERAL if interaction is not None else 0)
        if not extra_flags & LOADING:
            validate_message(body, files, allowed_flags)
        reference = body.get("message_reference")
        target = self._reference_target(reference, channel)
        guild = self._guild_of(channel)
        flags = (int(body.get("flags") or 0) & allowed_flags) | extra_flags
        message = message_base(
            self._ids.next(),
            int(channel["id"]),
            self.bot_user,
            content_of(body) or "",
            type=19 if target is not None and message_type == 0 else message_type,
            flags=flags,
            tts=bool(body.get("tts")),
            nonce=body.get("nonce"),
        )
        message["embeds"] = copy.deepcopy(body.get("embeds") or [])
        message["components"] = copy.deepcopy(body.get("components") or [])
        message["attachments"] = [
            attachment_json(self._ids.next(), int(channel["id"]), name, size)
            for name, size in files
        ]
        if interaction is not None:
            message["webhook_id"] = str(self.application_id)
            message["application_id"] = str(self.application_id)
            if message_type == 20:
                message["interaction_metadata"] = self._interaction_metadata(interaction)
        message["message_reference"] = None
        if target is not None:
            self._attach_reference(message, target)
        message["allowed_mentions"] = copy.deepcopy(body.get("allowed_mentions"))
        message["interaction_id"] = None if interaction is None else str(interaction.id)
        message["guild_id"] = None if guild is None else str(guild.id)
        self._apply_mentions(message, guild, target)
        self._store(message, channel)
        self._sent.append(message)
        if not flags & EPHEMERAL:
            self._dispatch_message("MESSAGE_CREATE", message)
        self._bump()
        return message

    def _edit_bot_message(
        self,
        message: JSONDict,
        body: JSONDict,
        *,
        files: list[tuple[str, int]] | None = None,
        by_webhook: bool = False,
        mark_edited: bool = True,
    ) -> JSONDict:
        """Apply an edit body (content, embeds, components, allowed_mentions, flags, new
        files); a webhook edit also ends the deferred "thinking" state."""
        if int(message["author"]["id"]) != self.application_id:
            raise DiscordError(403, "Cannot edit a message authored by another user", 50005)
        channel = self._known_channel(int(message["channel_id"]))
        merged = {**self._wire(message), **{k: v for k, v in body.items() if k != "flags"}}
        kept = bool(message["attachments"]) and body.get("attachments") != []
        validate_message(merged, files or [], SENDABLE_FLAGS | EPHEMERAL, files_kept=kept)
        if body.get("attachments") == []:
            message["attachments"] = []
        for name, size in files or []:
            new = attachment_json(self._ids.next(), int(channel["id"]), name, size)
            message["attachments"].append(new)
        if "content" in body:
            message["content"] = content_of(body) or ""
        for key in ("embeds", "components"):
            if key in body:
                message[key] = copy.deepcopy(body[key] or [])
        if "flags" in body and body["flags"] is not None:
            keep = int(message["flags"]) & (EPHEMERAL | ~SENDABLE_FLAGS)
            message["flags"] = keep | (int(body["flags"]) & SENDABLE_FLAGS)
        if by_webhook:
            message["flags"] = int(message["flags"]) & ~LOADING
        if "allowed_mentions" in body:
            message["allowed_mentions"] = copy.deepcopy(body["allowed_mentions"])
        target = None
        if message.get("message_reference"):
            target = self._messages.get(int(message["message_reference"]["message_id"]))
        self._apply_mentions(message, self._guild_of(channel), target)
        if mark_edited:
            message["edited_timestamp"] = iso()
        if not int(message["flags"]) & EPHEMERAL:
            self._dispatch_message("MESSAGE_UPDATE", message)
        self._bump()
        return message

    def _delete_message(self, message: JSONDict) -> None:
        channel_id = int(message["channel_id"])
        self._messages.pop(int(message["id"]), None)
        self.deleted.append((channel_id, int(message["id"])))
        if not int(message["flags"]) & EPHEMERAL:
            payload: JSONDict = {"id": message["id"], "channel_id": message["channel_id"]}
            if message.get("guild_id"):
                payload["guild_id"] = message["guild_id"]
            intent = Intents.GUILD_MESSAGES if message.get("guild_id") else Intents.DIRECT_MESSAGES
            if self._is_connected():
                self._dispatch("MESSAGE_DELETE", payload, intent)
        self._bump()

    def _channel_message(self, channel_id: int, message_id: int) -> JSONDict:
        """A non-ephemeral message in a channel, else 404 Unknown Message."""
        found = self._messages.get(message_id)
        if (
            found is None
            or int(found["channel_id"]) != channel_id
            or int(found["flags"]) & EPHEMERAL
        ):
            raise unknown("Message")
        return found

    # ------------------------------------------------------------------- internals

    def _reference_target(self, reference: Any, channel: JSONDict) -> JSONDict | None:
        if not isinstance(reference, dict) or reference.get("message_id") is None:
            return None
        target = self._messages.get(int(reference["message_id"]))
        if target is not None and int(reference.get("channel_id") or channel["id"]) != int(
            target["channel_id"]
        ):
            target = None
        if target is None or int(target["flags"]) & EPHEMERAL:
            if reference.get("fail_if_not_exists", True) is False:
                return None
            error = field_error(
                ("message_reference",), "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
            )
            raise invalid_form(error)
        return target

    def _attach_reference(self, message: JSONDict, target: JSONDict) -> None:
        reference: JSONDict = {
            "type": 0,
            "channel_id": target["channel_id"],
            "message_id": target["id"],
        }
        if target.get("guild_id"):
            reference["guild_id"] = target["guild_id"]
        message["message_reference"] = reference
        message["referenced_message"] = {
            k: v for k, v in self._wire(target).items() if k != "referenced_message"
        }
        message["type"] = 19 if message["type"] == 0 else message["type"]

    def _apply_mentions(
        self, message: JSONDict, guild: GuildState | None, target: JSONDict | None
    ) -> None:
        """The bot's pings: what the content mentions, filtered by ``allowed_mentions``."""
        users, roles, everyone = mentioned_ids(str(message["content"]))
        allowed = message.get("allowed_mentions")
        users, roles, everyone, replied = allowed_mentions_filter(allowed, users, roles, everyone)
        if everyone and guild is not None:
            perms = self.permissions_in(int(message["channel_id"]), self.application_id)
            everyone = bool(perms & Perm.MENTION_EVERYONE)
        if target is not None and (replied or (replied is None and allowed is None)):
            author_id = int(target["author"]["id"])
            if author_id not in users and author_id != self.application_id:
                users.append(author_id)
        self._fill_mentions(message, guild, users, roles, everyone)

    def _fill_mentions(
        self,
        message: JSONDict,
        guild: GuildState | None,
        users: list[int],
        roles: list[int],
        everyone: bool,
    ) -> None:
        found = []
        for user_id in users:
            user = self.users.get(user_id)
            if user is None:
                continue
            member = guild.members.get(user_id) if guild is not None else None
            found.append(with_member(user, member) if guild is not None else dict(user))
        message["mentions"] = found
        known_roles = guild.roles if guild is not None else {}
        message["mention_roles"] = [str(r) for r in roles if r in known_roles]
        message["mention_everyone"] = everyone

    def _store(self, message: JSONDict, channel: JSONDict) -> None:
        self._messages[int(message["id"])] = message
        if not int(message["flags"]) & EPHEMERAL:
            channel["last_message_id"] = message["id"]
            if channel["type"] in (10, 11, 12):
                channel["message_count"] = int(channel["message_count"]) + 1
                channel["total_message_sent"] = int(channel["total_message_sent"]) + 1
        self._bump()

    def _dispatch_message(self, event: str, message: JSONDict) -> None:
        """MESSAGE_CREATE/UPDATE as the gateway sends them: with ``guild_id`` and the author's
        partial ``member`` in guilds; content scrubbed for sessions without MESSAGE_CONTENT."""
        if not self._is_connected():
            return
        data = self._wire(message)
        guild_id = message.get("guild_id")
        if guild_id is not None:
            data["guild_id"] = guild_id
            member = self._guilds[int(guild_id)].members.get(int(message["author"]["id"]))
            if member is not None:
                data["member"] = partial_member(member)
        # each bot sees the content of messages that mention it, and of its own
        unscrubbed = frozenset(
            {int(u["id"]) for u in message["mentions"]} | {int(message["author"]["id"])}
        )
        intent = Intents.GUILD_MESSAGES if guild_id is not None else Intents.DIRECT_MESSAGES
        self._dispatch(event, data, intent, scrub=guild_id is not None, unscrubbed=unscrubbed)

    def _interaction_metadata(self, interaction: Interaction) -> JSONDict:
        payload = interaction.payload
        user = payload["member"]["user"] if "member" in payload else payload["user"]
        metadata: JSONDict = {
            "id": payload["id"],
            "type": payload["type"],
            "user": user,
            "authorizing_integration_owners": payload["authorizing_integration_owners"],
        }
        if payload["type"] == 2:
            metadata["name"] = payload["data"]["name"]
            metadata["command_type"] = payload["data"].get("type", 1)
        return metadata
