"""The admin API's catch-up (``POST /api/chats/{chat_key}/catchup``): one conversation of one
chat summarised, booked on the chat in the token's name, refused plainly, and described in the
OpenAPI document."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import aiohttp

from bot.guardrails.budgets import utc_day
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory, group
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, Served, serve_http

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def catchup_path(chat_key: str) -> str:
    return f"/api/chats/{quote(chat_key, safe='')}/catchup"


async def post(
    http: aiohttp.ClientSession,
    path: str,
    body: Any = None,
    status: int = 200,
    headers: dict[str, str] = ADMIN,
) -> Any:
    async with http.post(path, json=body, headers=headers) as r:
        assert r.status == status, await r.text()
        return await r.json()


async def chatter(served: Served) -> None:
    service = served.app.service
    await service.overhear(group("1", "Ann", chat="-100"), "the meetup moves to Thursday")
    await service.overhear(group("2", "Bo", chat="-100"), "I'll bring the projector")
    await service.overhear(group("3", "Cy", chat="-200"), "the chess club's own news")


async def test_a_conversation_is_summarised_and_booked_on_the_chat(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await chatter(served)
        fake_llm.script(reply("- Ann moved the meetup to Thursday; Bo brings the projector."))
        body = await post(http, catchup_path("telegram:-100"), {"messages": 10})
        booked = await served.app.store.tokens_on(utc_day(), "telegram:-100", "http:ops")
        document = await (await http.get("/api/openapi.json", headers=ADMIN)).json()
    request = fake_llm.chat_requests[-1].json
    content = request["messages"][-1]["content"]
    lines = [json.loads(line) for line in content.splitlines() if line.startswith("[")]
    assert [(who, words) for _, who, words in lines] == [
        ("Ann", "the meetup moves to Thursday"),
        ("Bo", "I'll bring the projector"),
    ]
    assert "chess" not in json.dumps(request)
    assert body == body | {
        "chat_key": "telegram:-100",
        "conversation_key": "telegram:-100",
        "summary": "- Ann moved the meetup to Thursday; Bo brings the projector.",
        "messages": 2,
        "left_out": 0,
        "speakers": ["Ann", "Bo"],
        "model_calls": 1,
    }
    assert body["reply"].startswith("Catch-up of the last 2 messages from Ann and Bo.")
    assert body["first_at"].endswith("+00:00") and body["last_at"] >= body["first_at"]
    used = body["usage"]
    assert used["prompt_tokens"] > 0
    assert booked == used["prompt_tokens"] + used["completion_tokens"]
    operation = document["paths"]["/api/chats/{chat_key}/catchup"]["post"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CatchupBody"
    }
    assert "speakers" in document["components"]["schemas"]["CatchupBody"]["properties"]


async def test_refusals_are_plain_and_cost_nothing(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await chatter(served)
        path = catchup_path("telegram:-100")
        fake_llm.script(reply("- Cy shared the chess club's news."))
        other = await post(http, catchup_path("telegram:-200"), {"hours": 1})
        refused = {
            json.dumps({"hours": "two"}): "hours must be a number",
            json.dumps({"hours": 1, "messages": 5}): "give hours or messages, not both",
            json.dumps({"messages": 5000}): "I read at most 1000 messages.",
            json.dumps({"hours": 1000}): "I look back at most 72 hours.",
            json.dumps({"since": "monday"}): 'the body is {"hours": N} or {"messages": N}',
            json.dumps({"conversation_key": "telegram:-200"}): "not one of this chat's",
        }
        for sent, problem in refused.items():
            async with http.post(path, data=sent, headers=ADMIN) as r:
                assert r.status == 400, sent
                error = (await r.json())["error"]
                assert problem in error["message"], sent
        nothing = await post(http, catchup_path("telegram:-999"), {})
        missing = await post(http, catchup_path("no-chat-key"), {}, status=404)
        chat_token = {"Authorization": f"Bearer {CHAT_TOKEN}"}
        await post(http, path, {}, status=403, headers=chat_token)
    assert missing["error"]["code"] == "chat_not_found"
    assert (nothing["messages"], nothing["summary"], nothing["model_calls"]) == (0, "", 0)
    assert nothing["reply"] == "I have nothing from this conversation to catch you up on yet."
    assert (other["messages"], other["model_calls"]) == (1, 1)
    assert other["reply"].startswith("Catch-up of the last hour: 1 message from Cy.")
    assert len(fake_llm.chat_requests) == 1  # the refusals made none


async def test_off_when_catchup_is_disabled(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with (
        serve_http(make_app, catchup={"enabled": False}) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        await chatter(served)
        body = await post(http, catchup_path("telegram:-100"), {}, status=404)
        assert "catchup" not in {info.name for info in served.app.commands.infos}
    assert body["error"]["code"] == "catchup_off"
