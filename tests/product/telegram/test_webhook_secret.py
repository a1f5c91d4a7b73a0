"""The webhook secret when none is configured: the same on every replica, never the token."""

from __future__ import annotations

import re

from adapters.telegram.settings import TelegramSettings

TOKEN_A = "5550123456:AAF9x-ReplicaTokenValue_0123456789abcd"
TOKEN_B = "5550123457:AAF9x-AnotherTokenValue_0123456789abcd"


def settings(token: str, **webhook: object) -> TelegramSettings:
    return TelegramSettings.model_validate(
        {
            "enabled": True,
            "token": token,
            "mode": "webhook",
            "webhook": {"url": "https://bot.example/telegram/webhook", **webhook},
        }
    )


def test_every_replica_derives_the_same_secret_from_the_token() -> None:
    first, second = settings(TOKEN_A).webhook_secret(), settings(TOKEN_A).webhook_secret()
    assert first == second  # two processes, or a restart: Telegram's header still matches
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,256}", first)  # what setWebhook accepts
    assert settings(TOKEN_B).webhook_secret() != first
    assert TOKEN_A not in first and TOKEN_A.split(":")[1] not in first


def test_a_configured_secret_wins() -> None:
    assert settings(TOKEN_A, secret_token="s3cret-Value_1").webhook_secret() == "s3cret-Value_1"
