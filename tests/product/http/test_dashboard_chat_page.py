"""A chat's dashboard page over plain HTTP (issue 27): answers as Markdown that cannot run,
each turn's tool calls folded, a cleared chat still listed with its title and audit, turn
counts labelled by what they count, counts in words, and the scope and persona forms."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import aiohttp

from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from bot.values import AuditAction
from tests.conftest import AppFactory, group
from tests.http_harness import logged_in, serve_http
from tests.product.http.test_dashboard_pages import csrf_of

HOSTILE = (
    "I can **summarise** it.\n\n"
    "<script>alert('script')</script>\n\n"
    "<img src=x onerror=\"alert('img')\">\n\n"
    "[a trap](javascript:alert('link')) and [a good one](https://example.org/a?b=1&c=2)\n\n"
    '<a href="javascript:alert(1)" onclick="alert(2)">raw html</a> <b>not bold</b>\n\n'
    "![pixel](https://tracker.example/p.png)\n\n"
    "- one\n- two"
)


class Elements(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags


async def page_of(http: aiohttp.ClientSession, path: str) -> str:
    async with http.get(path) as r:
        assert r.status == 200, r.status
        return await r.text()


async def test_answers_are_markdown_with_every_tag_escaped_and_only_safe_links(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply(HOSTILE))
    async with serve_http(make_app) as served:
        await served.app.service.chat(group(chat="-1"), "<script>alert('said')</script> **hi**")
        async with await logged_in(served) as http:
            page = await page_of(http, "/chats/telegram:-1")
    answer = page[page.index('<div class="markdown">') : page.index("</article>")]
    assert "<strong>summarise</strong>" in answer and "<li>two</li>" in answer
    assert "&lt;script&gt;alert('script')&lt;/script&gt;" in answer  # shown, as text
    assert "&lt;img src=x onerror=" in answer and "&lt;b&gt;not bold&lt;/b&gt;" in answer
    assert "[a trap](javascript:alert(" in answer  # the model's text, not a link
    tags = elements(page)
    scripts = [attrs.get("src") for tag, attrs in tags if tag == "script"]
    assert scripts == ["/static/parlour.js"]  # the page's own, and nothing else
    assert not [tag for tag, attrs in tags if any(name.startswith("on") for name in attrs)]
    assert not [tag for tag, _ in tags if tag in ("img", "iframe", "object", "embed")]
    links = [attrs for tag, attrs in tags if tag == "a" and "target" in attrs]
    assert [urlsplit(str(a["href"])).scheme for a in links] == ["https", "https"]
    assert {a["rel"] for a in links} == {"noopener noreferrer nofollow"}
    assert "&lt;script&gt;alert(&#39;said&#39;)&lt;/script&gt; **hi**" in page  # said: as typed


async def test_a_turns_tool_calls_are_listed_in_order_folded(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("calculate", {"expression": "2**10"}), ("calculate", {"expression": "1/0"})),
        reply("It is 1024."),
    )
    async with serve_http(make_app, plugins=["plugins.calculator"]) as served:
        await served.app.service.chat(group(chat="-2"), "two to the tenth, and 1/0?")
        async with await logged_in(served) as http:
            page = await page_of(http, "/chats/telegram:-2")
    folded = re.findall(r'<details class="tool-call">(.*?)</details>', page, re.S)
    assert len(folded) == 2
    assert '<code class="tool-name">calculate</code>' in folded[0]
    assert '<pre class="arguments">{\n  &#34;expression&#34;: &#34;2**10&#34;\n}</pre>' in folded[0]
    assert "2**10 = 1024" in folded[0] and "Error: division by zero" in folded[1]
    assert page.index("two to the tenth") < page.index("tool-call") < page.index("It is 1024.")


async def test_a_cleared_chat_stays_listed_with_its_title_type_and_audit(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served:
        await served.app.service.chat(group(chat="-3", chat_title="Book Club"), "hi")
        async with await logged_in(served) as http:
            csrf = await csrf_of(http, "/chats/telegram:-3")
            async with http.post("/chats/telegram:-3/clear", data={"csrf": csrf}) as r:
                page = await r.text()
            assert "History cleared: 1 turn deleted." in page  # not "1 turns"
            assert "<h1>Book Club</h1>" in page and "<dd>group</dd>" in page
            assert "deleted 1 turn, 2 messages" in page  # the audit row, on the chat's page
            listing = await page_of(http, "/")
    row = re.search(r"<tr>\s*<td><a href=\"/chats/telegram:-3\">(.*?)</tr>", listing, re.S)
    assert row and "Book Club" in row.group(1) and '<td class="num">0</td>' in row.group(1)


async def test_turns_stored_and_turns_billed_are_named_and_agree_with_the_usage_page(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served:
        for n in range(3):
            await served.app.service.chat(group(chat="-4"), f"question {n}")
        await served.app.store.clear_chat("telegram:-4", "1", "Alice")
        await served.app.service.chat(group(chat="-4"), "after the clear")
        async with await logged_in(served) as http:
            page = await page_of(http, "/chats/telegram:-4")
            usage = await page_of(http, "/usage")
            listing = await page_of(http, "/")
    assert re.search(r">Turns stored</dt><dd[^>]*>1</dd>", page)
    assert re.search(r">Turns billed, 14 days</dt><dd[^>]*><a href=\"/usage\">4</a>", page)
    assert ">Turns billed</th>" in usage and ">Turns stored</th>" in listing
    row = re.search(r'telegram:-4</code></a></td><td class="num">(\d+)</td>', usage)
    assert row and row.group(1) == "4"  # the same figure as the chat page's "billed"


async def test_the_scope_and_persona_forms_change_the_chat_audited_with_the_token(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app, chat={"max_persona_chars": 60}) as served:
        service = served.app.service
        await service.chat(group(chat="-5"), "hi")
        async with await logged_in(served) as http:
            path = "/chats/telegram:-5/settings"
            async with http.post(path, data={"scope": "user"}, allow_redirects=False) as r:
                assert r.status == 403  # no CSRF field: refused
            csrf = await csrf_of(http, "/chats/telegram:-5")
            form = {"csrf": csrf, "persona": "Talk like a pirate.\r\nAlways."}
            async with http.post(path, data=form, allow_redirects=False) as r:
                assert r.headers["Location"] == "/chats/telegram:-5?done=changed-persona"
            async with http.post(path, data={"csrf": csrf, "scope": "user"}) as r:
                page = await r.text()
            assert "Scope changed: the bot uses it from the next message on." in page
            assert re.search(r'<option value="user" selected>', page)
            assert ">Talk like a pirate.\nAlways.</textarea>" in page
            await service.chat(group(chat="-5"), "ahoy?")
            sent = fake_llm.chat_requests[-1].json["messages"]
            assert str(sent[0]["content"]).startswith("Talk like a pirate.\nAlways.")
            assert service.conversation_key(group(chat="-5")) == "telegram:-5:u:1"

            async with http.post(path, data={"csrf": csrf, "persona": "x" * 61}) as r:
                assert r.status == 400
                assert "the limit is 60" in await r.text()
            async with http.post(path, data={"csrf": csrf, "persona": "", "reset": "1"}) as r:
                assert "Persona changed" in await r.text()
            audit = [(e.action, e.actor_id) for e in await served.app.store.audit("telegram:-5")]
            assert audit == [
                (AuditAction.PERSONA, "http:ops"),
                (AuditAction.SCOPE, "http:ops"),
                (AuditAction.PERSONA, "http:ops"),
            ]
            assert service.persona(group(chat="-5")).source.value == "default"
