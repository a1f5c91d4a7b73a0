"""Per-chat settings (bot.storage.chat_settings)."""

from __future__ import annotations

from bot.context import Scope
from bot.storage import Storage
from bot.values import ChatPreferences
from tests.conformance.conftest import Backend, answered


async def test_preferences_round_trip(backend: Backend) -> None:
    async with backend.open() as store:
        await store.save_preferences("tg:1", ChatPreferences(scope=Scope.THREAD))
        await store.save_preferences("tg:2", ChatPreferences(system_prompt="Be brief."))
        await store.save_preferences("tg:2", ChatPreferences(scope=Scope.USER))  # replaces
    async with backend.open() as store:
        prefs = await store.load_preferences()
    assert prefs == {
        "tg:1": ChatPreferences(scope=Scope.THREAD, system_prompt=None),
        "tg:2": ChatPreferences(scope=Scope.USER, system_prompt=None),
    }


async def test_clears_keep_settings_and_migration_moves_them(storage: Storage) -> None:
    await storage.save_preferences("tg:-1", ChatPreferences(scope=Scope.USER))
    await storage.save_preferences("tg:-3", ChatPreferences(scope=Scope.USER))
    await storage.save_preferences("tg:-300", ChatPreferences(scope=Scope.THREAD))
    await answered(storage, "tg:-1", "a", "b")
    await storage.clear_chat("tg:-1", "a", "A")
    assert "tg:-1" in await storage.load_preferences()
    await storage.migrate_chat("tg:-1", "tg:-100")
    await storage.migrate_chat("tg:-3", "tg:-300")  # the new chat's own row wins
    prefs = await storage.load_preferences()
    assert prefs["tg:-100"] == ChatPreferences(scope=Scope.USER)
    assert prefs["tg:-300"] == ChatPreferences(scope=Scope.THREAD)
    assert "tg:-1" not in prefs


async def test_ambient_mode_round_trips_beside_the_other_settings(backend: Backend) -> None:
    async with backend.open() as store:
        await store.save_preferences("tg:1", ChatPreferences(ambient=True))
        await store.save_preferences("tg:2", ChatPreferences(scope=Scope.USER, ambient=False))
        await store.save_preferences("tg:3", ChatPreferences(ambient=True))
        await store.save_preferences("tg:3", ChatPreferences(system_prompt="Be brief."))
    async with backend.open() as store:
        prefs = await store.load_preferences()
        await store.migrate_chat("tg:1", "tg:100")  # a migrated chat keeps its ambient mode
        moved = await store.load_preferences()
    assert prefs["tg:1"] == ChatPreferences(ambient=True)
    assert prefs["tg:2"] == ChatPreferences(scope=Scope.USER, ambient=False)
    assert prefs["tg:3"] == ChatPreferences(system_prompt="Be brief.")  # replaced: back to None
    assert moved["tg:100"] == ChatPreferences(ambient=True)
