"""Interactions in the fake Discord: users invoking slash commands and pressing buttons, and
the bot's answers through ``/interactions/{id}/{token}/callback`` and the application
webhook (followups, ``@original``).

Discord's rules that bots get wrong in production are enforced: one acknowledgement per
interaction (then 40060), the initial callback within 3 seconds (then 10062 Unknown
interaction), followups only after acknowledging and within 15 minutes, and after a deferred
response (type 5) the first followup fills the "thinking" message instead of posting anew.
"""

from __future__ import annotations

import copy
import secrets
import time
from typing import Any

from bot.testing.discord.cdn import Upload
from bot.testing.discord.commands import Resolver, build_options
from bot.testing.discord.gateway import DiscordGateway
from bot.testing.discord.messages import EPHEMERAL, LOADING
from bot.testing.discord.payloads import as_snowflake, partial_member
from bot.testing.discord.permissions import Perm
from bot.testing.discord.state import GuildState, Interaction
from bot.testing.discord.wire import (
    Call,
    DiscordError,
    JSONDict,
    field_error,
    invalid_form,
    unknown,
)

__all__ = ["DiscordInteractions"]

# Which callback types each interaction type accepts (PING is HTTP-only, never here).
_ALLOWED_CALLBACKS = {2: {4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}, 5: {4, 5, 6, 7}}
_ATTACHMENT_LIMIT = 10 * 1024 * 1024


class DiscordInteractions(DiscordGateway):
    """Slash commands, component clicks and the interaction REST endpoints."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._by_token: dict[str, int] = {}
        self._command_allows: dict[tuple[int, str], set[int]] = {}

    def allow_command(self, guild: JSONDict, name: str, target_id: int | None = None) -> None:
        """A server admin's override (Server Settings -> Integrations): let a user or role
        (``None``: everyone) use ``/name`` whatever its ``default_member_permissions`` says.
        Bots must still check permissions at run time; this is why."""
        guild_id = int(guild["id"])
        self._command_allows.setdefault((guild_id, name), set()).add(
            guild_id if target_id is None else target_id  # @everyone's role id is the guild's
        )

    # ---------------------------------------------------------------- acting as users

    def slash(
        self,
        channel: JSONDict,
        user: JSONDict,
        name: str,
        options: dict[str, Any] | None = None,
        *,
        locale: str = "en-US",
    ) -> JSONDict:
        """``user`` runs ``/name`` in ``channel`` (``"group sub"`` for subcommands): dispatches
        INTERACTION_CREATE and returns the interaction payload.

        The command must be registered (bulk overwrite) for the channel's guild or globally,
        usable there (DMs, ``default_member_permissions``), and the options must fit its
        definition; else ValueError, since the Discord client would not let the user send it.
        Option values: plain values, or user/channel/role dicts (or ids) for those types, an
        :class:`~bot.testing.discord.cdn.Upload` for an attachment (served by the CDN).
        """
        stored = self._known_channel(int(channel["id"]))
        guild = self._guild_of(stored)
        self._join(guild, user)
        words = name.split()
        if not words:
            raise ValueError("empty command name")
        command = self._find_command(words[0], guild, int(user["id"]), int(stored["id"]))
        built, resolved = build_options(command, name, options, self._resolver(guild, stored, user))
        data: JSONDict = {"id": command["id"], "name": command["name"], "type": 1}
        if built:
            data["options"] = built
        if resolved:
            data["resolved"] = resolved
        if command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        return self._new_interaction(2, data, stored, guild, user, locale)

    def click(
        self,
        message: JSONDict,
        user: JSONDict,
        custom_id: str,
        *,
        values: list[str] | None = None,
        component_type: int = 2,
        locale: str = "en-US",
    ) -> JSONDict:
        """``user`` presses a button (or picks ``values`` in a select) on the bot's ``message``:
        dispatches a MESSAGE_COMPONENT interaction and returns it."""
        stored = self._messages.get(int(message["id"]))
        if stored is None or int(stored["author"]["id"]) != self.application_id:
            raise ValueError(f"message {message['id']} is not a message of the bot")
        channel = self._known_channel(int(stored["channel_id"]))
        guild = self._guild_of(channel)
        self._join(guild, user)
        data: JSONDict = {"custom_id": custom_id, "component_type": component_type}
        if values is not None:
            data["values"] = list(values)
        return self._new_interaction(3, data, channel, guild, user, locale, message=stored)

    # ----------------------------------------------------------------- REST: callback

    async def _interaction_callback(self, call: Call) -> Any:
        found = self._interactions.get(call.id("interaction_id"))
        if found is None or found.token != call.params["interaction_token"]:
            raise unknown("interaction")
        if found.acked is not None:
            raise DiscordError(400, "Interaction has already been acknowledged.", 40060)
        if time.monotonic() - found.created > self.interaction_timeout:
            raise unknown("interaction")
        body = call.object()
        kind = body.get("type")
        if not isinstance(kind, int) or kind not in range(1, 13):
            raise invalid_form(
                field_error(
                    ("type",),
                    "BASE_TYPE_CHOICES",
                    "Value must be one of {1, 4, 5, 6, 7, 8, 9, 10, 12}.",
                )
            )
        if kind not in _ALLOWED_CALLBACKS[found.type]:
            text = "Interaction response type is not valid for this interaction type"
            raise invalid_form(field_error(("type",), "INTERACTION_RESPONSE_TYPE_INVALID", text))
        given = body.get("data")
        data: JSONDict = given if isinstance(given, dict) else {}
        channel = self._known_channel(found.channel_id)
        message: JSONDict | None = None
        if kind == 4:
            message = self._create_bot_message(
                channel, data, files=call.files, interaction=found, message_type=20
            )
        elif kind == 5:
            flags = LOADING | (int(data.get("flags") or 0) & EPHEMERAL)
            placeholder = {"content": ""}
            message = self._create_bot_message(
                channel, placeholder, interaction=found, message_type=20, extra_flags=flags
            )
        elif kind in (6, 7):
            source = found.payload.get("message")
            message = None if source is None else self._messages.get(int(source["id"]))
            if message is None:
                raise unknown("Message")
            if kind == 7:
                message = self._edit_bot_message(message, data, files=call.files)
        elif kind == 9 and not (
            data.get("custom_id") and data.get("title") and data.get("components")
        ):
            raise invalid_form(
                field_error(("data",), "BASE_TYPE_REQUIRED", "This field is required")
            )
        found.acked = kind
        if message is not None:
            found.original_id = int(message["id"])
        self.callbacks.append(
            {
                "interaction_id": found.id,
                "type": kind,
                "data": copy.deepcopy(data),
                "at": time.monotonic(),
            }
        )
        self._bump()
        if not call.flag("with_response"):
            return None
        summary: JSONDict = {
            "id": str(found.id),
            "type": found.type,
            "response_message_loading": kind == 5,
            "response_message_ephemeral": bool(message and int(message["flags"]) & EPHEMERAL),
        }
        response: JSONDict = {"interaction": summary, "resource": {"type": kind}}
        if message is not None:
            summary["response_message_id"] = message["id"]
            response["resource"]["message"] = self._wire(message)
        return response

    # --------------------------------------------------------------- REST: webhooks

    async def _followup(self, call: Call) -> Any:
        found = self._webhook_interaction(call)
        body = call.object()
        original = self._messages.get(found.original_id) if found.original_id else None
        if found.acked == 5 and original is not None and int(original["flags"]) & LOADING:
            # Discord: the first followup after a deferred response replaces the placeholder.
            edit = {k: v for k, v in body.items() if k != "flags"}
            message = self._edit_bot_message(
                original, edit, files=call.files, by_webhook=True, mark_edited=False
            )
        else:
            channel = self._known_channel(found.channel_id)
            message = self._create_bot_message(channel, body, files=call.files, interaction=found)
        found.followup_ids.append(int(message["id"]))
        self._bump()
        return self._wire(message) if call.flag("wait") else None

    async def _get_webhook_message(self, call: Call) -> Any:
        return self._wire(self._webhook_message(self._webhook_interaction(call), call))

    async def _edit_webhook_message(self, call: Call) -> Any:
        found = self._webhook_interaction(call)
        message = self._webhook_message(found, call)
        edited = self._edit_bot_message(message, call.object(), files=call.files, by_webhook=True)
        return self._wire(edited)

    async def _delete_webhook_message(self, call: Call) -> Any:
        self._delete_message(self._webhook_message(self._webhook_interaction(call), call))
        return None

    def _webhook_interaction(self, call: Call) -> Interaction:
        """The interaction behind ``/webhooks/{application id}/{interaction token}``."""
        interaction_id = self._by_token.get(call.params["webhook_token"])
        found = None if interaction_id is None else self._interactions[interaction_id]
        if found is None or call.params["webhook_id"] != found.payload["application_id"]:
            raise unknown("Webhook")
        if time.monotonic() - found.created > self.interaction_token_ttl:
            raise DiscordError(401, "Invalid Webhook Token", 50027)
        if found.acked is None:
            raise unknown("Webhook")
        return found

    def _webhook_message(self, found: Interaction, call: Call) -> JSONDict:
        wanted = call.params["message_id"]
        if wanted == "@original":
            message_id = found.original_id
        else:
            message_id = call.id("message_id")
            if message_id != found.original_id and message_id not in found.followup_ids:
                message_id = None
        message = None if message_id is None else self._messages.get(message_id)
        if message is None:
            raise unknown("Message")
        return message

    # ------------------------------------------------------------------- internals

    def _join(self, guild: GuildState | None, user: JSONDict) -> None:
        self.users.setdefault(int(user["id"]), user)
        if guild is not None and int(user["id"]) not in guild.members:
            self.member(guild.guild, user)

    def _find_command(
        self, name: str, guild: GuildState | None, user_id: int, channel_id: int
    ) -> JSONDict:
        scopes = ([guild.id] if guild is not None else []) + [None]
        for scope in scopes:
            for command in self._commands.get(scope, []):
                if command["name"] == name and command.get("type", 1) == 1:
                    self._check_usable(command, guild, user_id, channel_id)
                    return command
        where = f"in guild {guild.id} or globally" if guild is not None else "globally (DMs)"
        raise ValueError(
            f"/{name} is not registered {where} by {self._app.name}; sync the command tree first"
        )

    def _check_usable(
        self, command: JSONDict, guild: GuildState | None, user_id: int, channel_id: int
    ) -> None:
        if guild is None:
            contexts = command.get("contexts")
            if command.get("dm_permission") is False or (
                contexts is not None and 1 not in contexts
            ):
                raise ValueError(f"/{command['name']} is not available in DMs")
            return
        required = command.get("default_member_permissions")
        allowed = self._command_allows.get((guild.id, str(command["name"])), set())
        member = guild.members.get(user_id) or {}
        holders = {user_id, guild.id, *(int(r) for r in member.get("roles", []))}
        if required is not None and not allowed & holders:
            needed = int(required)  # "0": administrators only
            perms = self.permissions_in(channel_id, user_id)
            if not perms & Perm.ADMINISTRATOR and (needed == 0 or perms & needed != needed):
                raise ValueError(
                    f"/{command['name']}: the user lacks default_member_permissions={needed}"
                )

    def _resolver(self, guild: GuildState | None, channel: JSONDict, invoker: JSONDict) -> Resolver:
        def resolve(kind: int, value: Any) -> tuple[str, list[tuple[str, str, JSONDict]]]:
            if kind == 11:  # the client uploads the file with the command: it is on the CDN
                if not isinstance(value, Upload):
                    raise ValueError(f"an attachment option takes an Upload, not {value!r}")
                attachment = self.cdn.publish(int(channel["id"]), self._ids.next(), value)
                return attachment["id"], [("attachments", attachment["id"], attachment)]
            target = as_snowflake(value)
            key = str(target)
            role = guild.roles.get(target) if guild is not None else None
            if kind in (8, 9) and role is not None:
                return key, [("roles", key, role)]
            if kind in (6, 9) and target in self.users:
                entries = [("users", key, self.users[target])]
                if guild is not None and target in guild.members:
                    member = partial_member(guild.members[target])
                    member["permissions"] = str(self.permissions_in(int(channel["id"]), target))
                    entries.append(("members", key, member))
                return key, entries
            if kind == 7 and target in self._channels:
                found = dict(self._channels[target])
                found["permissions"] = str(self.permissions_in(target, int(invoker["id"])))
                return key, [("channels", key, found)]
            raise ValueError(f"option value {value!r} is not a known {_KINDS[kind]}")

        return resolve

    def _new_interaction(
        self,
        kind: int,
        data: JSONDict,
        channel: JSONDict,
        guild: GuildState | None,
        user: JSONDict,
        locale: str,
        *,
        message: JSONDict | None = None,
    ) -> JSONDict:
        interaction_id = self._ids.next()
        channel_id = int(channel["id"])
        user_id = int(user["id"])
        shown = dict(channel)
        shown["permissions"] = str(self.permissions_in(channel_id, user_id))
        payload: JSONDict = {
            "id": str(interaction_id),
            "application_id": str(self.application_id),
            "type": kind,
            "data": data,
            "channel": shown,
            "channel_id": str(channel_id),
            "token": secrets.token_urlsafe(96),
            "version": 1,
            "locale": locale,
            "app_permissions": str(self.permissions_in(channel_id, self.application_id)),
            "entitlements": [],
            "entitlement_sku_ids": [],
            "authorizing_integration_owners": {"0": str(guild.id) if guild is not None else "0"},
            "context": 0 if guild is not None else 1,
            "attachment_size_limit": _ATTACHMENT_LIMIT,
        }
        if guild is not None:
            payload["guild_id"] = str(guild.id)
            guild_locale = guild.guild["preferred_locale"]
            payload["guild"] = {"id": str(guild.id), "locale": guild_locale, "features": []}
            payload["guild_locale"] = guild_locale
            member = copy.deepcopy(guild.members[user_id])
            member["permissions"] = shown["permissions"]
            payload["member"] = member
        else:
            payload["user"] = user
        if message is not None:
            payload["message"] = self._wire(message)
        record = Interaction(payload)
        self._interactions[interaction_id] = record
        self._by_token[record.token] = interaction_id
        if self._is_connected():
            self._dispatch("INTERACTION_CREATE", copy.deepcopy(payload))
        self._bump()
        return payload


_KINDS = {6: "user", 7: "channel", 8: "role", 9: "user or role"}
