"""A fake Telegram Bot API server, so Telegram bots can be tested offline with their real client.

It speaks the Bot API wire protocol (``/bot<token>/<method>``, form, JSON or query bodies,
``{"ok": false, "error_code", "description", "parameters"}`` errors, HTML validation, the
4096-character limit, long polling and webhooks) well enough that aiogram itself is the
client in tests::

    from aiogram import Bot, Dispatcher
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer
    from aiogram.filters import CommandStart
    from aiogram.types import Message

    dp = Dispatcher()

    @dp.message(CommandStart())
    async def hello(message: Message) -> None:
        await message.answer(f"Hello, <b>{message.chat.first_name}</b>!", parse_mode="HTML")

    async with FakeTelegram() as fake:                     # or the fake_telegram fixture
        api = TelegramAPIServer.from_base(fake.api_server)
        bot = Bot(fake.token, session=AiohttpSession(api=api))
        polling = asyncio.create_task(dp.start_polling(bot, handle_signals=False))
        alice = fake.user(42, "Alice", username="alice")
        fake.send(fake.private_chat(alice), alice, "/start")  # a user writes to the bot
        [reply] = await fake.wait_for_message(42)
        assert reply["text"] == "Hello, Alice!"            # plain text after HTML parsing
        assert fake.sent == [reply]
        await dp.stop_polling()
        await polling                                       # also closes the bot's session

Acting as users: ``user``, ``private_chat``, ``group``, ``set_member``, ``topic``, ``send``
(entities are detected with UTF-16 offsets, like Telegram), ``press`` (inline buttons), ``migrate``
(group to supergroup), ``edit`` (a user edits a message: ``edited_message``), ``channel`` and
``post`` (a channel post), ``send_photo`` / ``send_document`` / ``send_voice`` / ``send_audio``
(bytes the bot fetches with ``getFile`` and ``/file/bot<token>/<path>``; ``downloads`` lists what
it fetched) and ``push_update`` (anything raw, served as given: also an update the bot's library
cannot parse, to test that polling survives it). Delivery honours ``allowed_updates`` of the last
``getUpdates``/``setWebhook``, as Telegram does. Reading back: ``sent`` (every message the bot
created, current state after edits), ``messages(chat_id)``, ``edits(chat_id, message_id)``,
``actions``, ``commands``, ``calls`` (every API call) and ``webhook_deliveries``; waiting:
``wait_for_message``, ``wait_until``, ``wait_idle``. Without polling: ``take_updates`` hands
the pending updates over (confirmed, as a poll would) to a test that feeds its bot's dispatcher
in-process (``dp.feed_update``), the bot's calls still going to the fake. Failures: ``flood``
(429 with retry_after), ``fail`` (any status), ``block`` (403); ``heal`` drops the failures
still queued.
Errors use Telegram's exact texts, so bots can be tested on what they branch on.

Like a new BotFather bot, it starts in privacy mode: in groups where the bot is not an admin
only commands, @mentions of the bot and replies to its messages reach it. Set
``fake.privacy_mode = False`` (or make the bot an admin with ``fake.set_member(chat_id,
fake.bot_id, "administrator")``) to deliver every group message.

Implemented methods: getMe, getUpdates, setWebhook, deleteWebhook, getWebhookInfo,
sendMessage, editMessageText, editMessageReplyMarkup, deleteMessage, sendChatAction, getChat,
getChatMember, getChatAdministrators, getChatMemberCount, setMyCommands, getMyCommands,
deleteMyCommands, answerCallbackQuery, getFile (and the file download route). Any other
method answers 404 ``Not Found``.

Run standalone with ``python -m bot.testing.fake_telegram --port 8081 --token 1:abc``; it
prints the api_server URL. Its small HTTP control API, for tests in another process:

* ``POST /_fake/send`` JSON ``{chat_id, user_id, text, chat_type?, first_name?, username?,
  reply_to_message_id?, thread_id?}``: a user writes a message (users and chats are created
  on first use; ``chat_type`` defaults to private when ``chat_id == user_id``, else group).
  Answers ``{"ok": true, "result": <Message>}``.
* ``GET /_fake/sent``: JSON list of the bot's messages; ``GET /_fake/calls``: every call.
"""

# The public path of the kit; the code lives in :mod:`bot.testing.telegram`.

from __future__ import annotations

from bot.testing.telegram.server import (
    ApiCall,
    ChatAction,
    FakeTelegram,
    WebhookDelivery,
    main,
)

__all__ = [
    "ApiCall",
    "ChatAction",
    "FakeTelegram",
    "WebhookDelivery",
    "main",
]

if __name__ == "__main__":
    raise SystemExit(main())
