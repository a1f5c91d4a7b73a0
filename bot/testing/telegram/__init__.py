"""The fake Telegram Bot API (``FakeTelegram``); its public path is
``bot.testing.fake_telegram``."""
