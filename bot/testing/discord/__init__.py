"""The fake Discord REST API and gateway (``FakeDiscord``); its public path is
``bot.testing.fake_discord``."""
