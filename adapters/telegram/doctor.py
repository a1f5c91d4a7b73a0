"""Telegram's rows for ``python -m bot doctor``, and the same checks logged when ``run`` starts.

* the token works (``getMe``; 401: the token was rejected), and each of ``telegram.bots``'s;
* privacy mode (``can_read_all_group_messages`` false: in groups only commands, @mentions and
  replies reach the bot) - a warning, since admin rights in a group lift it there;
* in each configured group (named in ``access.allow``, ``chats:`` presets or
  ``telegram.chats``): the bot is in it, and if the chat's trigger wants every message
  (``keep_context`` or ``keywords``) while privacy mode is on, that it is an admin there;
* ``getWebhookInfo``: the last delivery error and the updates waiting.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime

import aiohttp
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import AiogramError, TelegramUnauthorizedError
from aiogram.types import User

from adapters.telegram.settings import TelegramSettings, telegram_settings
from bot.config import Settings, safe_url
from bot.doctor import Check, fail, passed, warn
from bot.doctor.targets import named_ids

__all__ = ["configured_chats", "diagnose", "platform_checks"]

TIMEOUT = 10  # seconds for each Bot API call
RECENT_ERROR = 3600.0  # a webhook error younger than this fails the row; older ones warn
PRIVACY_FIX = (
    "BotFather: /setprivacy -> the bot -> Disable, then remove and re-add the bot to each group; "
    "or make it an admin where it should read everything"
)
_ERRORS = (AiogramError, aiohttp.ClientError, OSError, TimeoutError)


async def diagnose(settings: Settings) -> list[Check]:
    config = telegram_settings(settings)
    rows = await _diagnose_bot(config, "telegram", configured_chats(settings))
    for extra in config.bots:  # telegram.bots: each token checked on its own
        own = config.for_bot(extra)
        rows += await _diagnose_bot(own, extra.platform, None)
    return rows


async def _diagnose_bot(
    config: TelegramSettings, label: str, chats: list[int] | None
) -> list[Check]:
    """One bot's rows: its token, then (``chats`` given: the main bot) the platform checks."""
    api = TelegramAPIServer.from_base(config.api_server)
    bot = Bot(config.bot_token, session=AiohttpSession(api=api, timeout=TIMEOUT))
    try:
        try:
            me = await bot.me()
        except TelegramUnauthorizedError:
            return [
                fail(
                    f"{label} token",
                    "the bot token was rejected by Telegram (401 Unauthorized)",
                    f"set {_token_key(label)} to the token BotFather gave you"
                    " (BotFather: /mybots -> the bot -> API Token)",
                )
            ]
        except _ERRORS as exc:
            return [
                fail(
                    f"{label} token",
                    f"cannot reach {safe_url(config.api_server)}: {exc}",
                    "check telegram.api_server and this host's network",
                )
            ]
        token_row = passed(f"{label} token", f"@{me.username} (id {me.id})")
        if chats is None:  # one of telegram.bots: its token, and whether it reads the groups
            privacy = _privacy(me, config)
            return [token_row, replace(privacy, name=f"{label} privacy mode")]
        return [token_row, *await platform_checks(bot, me, config, chats)]
    finally:
        await bot.session.close()


def configured_chats(settings: Settings) -> list[int]:
    """Group chats the config names (negative ids: a positive one is a person's private chat)."""
    config = telegram_settings(settings)
    ids = named_ids(settings, "telegram:")
    ids += [int(key) for key in config.chats if key.lstrip("-").isdigit()]
    return [chat for chat in dict.fromkeys(ids) if chat < 0]


async def platform_checks(
    bot: Bot, me: User, config: TelegramSettings, chats: list[int]
) -> list[Check]:
    """Everything after the token: also what ``run`` logs at WARNING when it starts."""
    rows = [_privacy(me, config)]
    for chat_id in chats:
        rows.append(await _chat(bot, me, config, chat_id))
    rows.append(await _webhook(bot, config))
    return rows


def _privacy(me: User, config: TelegramSettings) -> Check:
    if me.can_read_all_group_messages:
        return passed("telegram privacy mode", "off: the bot sees every message in its groups")
    trigger = config.group_trigger
    wanted = [
        what
        for what, on in (
            ("keyword triggers", bool(trigger.keywords)),
            ("group context (keep_context)", trigger.keep_context),
        )
        if on
    ]
    verb = "needs" if len(wanted) == 1 else "need"
    needs = f"; {' and '.join(wanted)} {verb} every message" if wanted else ""
    return warn(
        "telegram privacy mode",
        "on: in groups where it is not an admin the bot sees only commands, @mentions and "
        f"replies to it{needs}",
        PRIVACY_FIX,
    )


async def _chat(bot: Bot, me: User, config: TelegramSettings, chat_id: int) -> Check:
    name = f"telegram chat {chat_id}"
    try:
        chat = await bot.get_chat(chat_id)
        member = await bot.get_chat_member(chat_id, me.id)
    except _ERRORS as exc:
        return fail(
            name,
            f"not reachable: {exc}",
            f"add @{me.username} to the chat, or correct the id in the config",
        )
    title = f"{chat.title!r}: " if chat.title else ""
    status = str(getattr(member.status, "value", member.status))
    if status in ("left", "kicked"):
        return fail(name, f"{title}the bot is not a member ({status})", f"add @{me.username}")
    if status == "restricted" and not getattr(member, "can_send_messages", True):
        return fail(
            name, f"{title}the bot may not send messages here", "lift the bot's restriction"
        )
    if status in ("administrator", "creator"):
        return passed(name, f"{title}the bot is an admin")
    trigger = config.trigger_for(chat_id)
    if me.can_read_all_group_messages or not (trigger.keep_context or trigger.keywords):
        return passed(name, f"{title}the bot is a member (not an admin)")
    needs = "keywords" if trigger.keywords else "keep_context"
    return fail(
        name,
        f"{title}the bot is not an admin and privacy mode is on: it sees only commands, "
        f"@mentions and replies here, but its trigger wants every message ({needs})",
        f"make @{me.username} an admin of this chat, or turn privacy mode off (see the privacy "
        "mode row)",
    )


async def _webhook(bot: Bot, config: TelegramSettings) -> Check:
    name = "telegram webhook"
    try:
        info = await bot.get_webhook_info()
    except _ERRORS as exc:
        return fail(name, f"getWebhookInfo failed: {exc}", "check telegram.api_server")
    pending = f"{info.pending_update_count} updates waiting"
    shown = safe_url(info.url) if info.url else ""
    if config.mode == "polling" and info.url:
        return warn(
            name,
            f"a webhook is set ({shown}) while this bot polls; {pending}",
            "polling deletes it when `run` starts: if another deployment uses this token in "
            "webhook mode, give each deployment its own bot",
        )
    if config.mode == "polling":
        return passed(name, f"none set (polling); {pending}")
    if info.last_error_message:
        age = time.time() - _timestamp(info.last_error_date)
        detail = f"{shown}: last delivery error {_ago(age)}: {info.last_error_message}; {pending}"
        fix = (
            "make telegram.webhook.url reach this bot's webhook server (TLS certificate, port, "
            "proxy), and keep `run` up"
        )
        return fail(name, detail, fix) if age < RECENT_ERROR else warn(name, detail, fix)
    if not info.url:
        return passed(name, f"not set yet (`run` sets it); {pending}")
    return passed(name, f"{shown}: no delivery errors; {pending}")


def _timestamp(value: datetime | int | None) -> float:
    if value is None:
        return time.time()
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"


def _token_key(label: str) -> str:
    """Where the rejected token is set: the main bot's, or one of ``telegram.bots``."""
    if label == "telegram":
        return "TELEGRAM_BOT_TOKEN (or telegram.token)"
    return f"the token of telegram.bots {label.partition('.')[2]!r}"
