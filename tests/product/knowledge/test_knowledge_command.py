"""``/knowledge`` in a Telegram group: who may bind which base, and what binding changes in the
prompt (the real adapter on the fake Bot API; getChatMember decides who is an admin)."""

from __future__ import annotations

from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, group
from tests.product.knowledge.test_knowledge_chat import FAQ, RULES, add, passage_block
from tests.telegram_harness import fed_bot

BASES = {"bases": {"rules": {}, "faq": {"shared": True}}}
PRESET = {"chats": [{"match": "telegram:-100", "knowledge": ["rules"]}]}


async def test_a_chat_admin_binds_a_shared_base_and_the_next_question_searches_it(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    admin, member = tg.user(7, "Alice"), tg.user(8, "Bob")
    team = tg.group(-200, "Team", supergroup=True)
    tg.set_member(team["id"], admin["id"], "administrator")
    tg.set_member(team["id"], member["id"], "member")
    async with fed_bot(make_app, tg, telegram={"stream": False}, knowledge=BASES) as fed:
        await add(fed.app, "faq", "faq.md", FAQ)
        await add(fed.app, "rules", "rules.md", RULES)
        tg.send(team, member, "/knowledge bind faq")
        [refused] = await fed.replies(team["id"])
        assert "Only this chat's admins" in refused["text"]
        assert await fed.app.platform.store.bound_bases("telegram:-200") == []

        tg.send(team, admin, "/knowledge bind rules")  # not shared: bot admins only
        messages = await fed.replies(team["id"], count=2)
        assert "Only the bot's admins can bind rules" in messages[-1]["text"]

        tg.send(team, admin, "/knowledge bind faq")
        messages = await fed.replies(team["id"], count=3)
        assert "faq now searched here" in messages[-1]["text"]
        assert await fed.app.platform.store.bound_bases("telegram:-200") == ["faq"]

        fake_llm.script(reply("Hold the blue button [1]."))
        tg.send(team, member, "@parlour_bot how do I set up the widget?")
        messages = await fed.replies(team["id"], count=4)
        block = passage_block(fake_llm)
        assert block is not None and "blue button" in block["content"]
        assert "Sources: [1] faq.md › Setup" in messages[-1]["text"]

        tg.send(team, admin, "/knowledge")
        messages = await fed.replies(team["id"], count=5)
        assert "- faq" in messages[-1]["text"]
        tg.send(team, admin, "/tools")
        messages = await fed.replies(team["id"], count=6)
        assert "- search_knowledge (built in: knowledge bases faq)" in messages[-1]["text"]

        tg.send(team, admin, "/knowledge unbind faq")
        messages = await fed.replies(team["id"], count=7)
        assert "no longer searched" in messages[-1]["text"]
        tg.send(team, member, "@parlour_bot how do I set up the widget?")
        await fed.replies(team["id"], count=8)
        assert passage_block(fake_llm) is None
        tools = fake_llm.chat_requests[-1].json.get("tools") or []
        assert all(t["function"]["name"] != "search_knowledge" for t in tools)


async def test_a_bot_admin_binds_any_base_and_a_presets_base_stays(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    owner = tg.user(7, "Owner")
    team, other = tg.group(-100, "Team"), tg.group(-300, "Other")
    async with fed_bot(
        make_app, tg, telegram={"stream": False}, knowledge=BASES, admins=["telegram:7"],
        **PRESET,
    ) as fed:  # fmt: skip
        tg.send(other, owner, "/knowledge bind rules")
        [bound] = await fed.replies(other["id"])
        assert "rules now searched here" in bound["text"]
        tg.send(team, owner, "/knowledge unbind rules")
        [kept] = await fed.replies(team["id"])
        assert "bound to this chat in the config" in kept["text"]
        tg.send(team, owner, "/knowledge bind nosuch")
        messages = await fed.replies(team["id"], count=2)
        assert "no knowledge base 'nosuch'" in messages[-1]["text"]


async def test_history_counts_the_search_tool_where_a_base_is_bound(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    bound, other = group(chat="-100"), group(chat="-200")
    async with make_app(knowledge=BASES, plugins=[], **PRESET) as app:
        here = await app.service.history_info(bound)
        there = await app.service.history_info(other)
    assert here.budget < there.budget  # search_knowledge's definition takes its tokens
