"""Update delivery and call dispatch of the fake Telegram server: long polling and webhooks.

``getUpdates`` is a real long poll (a newer poll ends an older one with 409, as Telegram
does when two bot instances run), and a webhook gets each update POSTed in order with the
secret header, retried a few times on failure. Bots get the two modes' edge cases exactly
where production would give them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from bot.testing.telegram.methods import BotApi, Described, Handler
from bot.testing.telegram.wire import (
    ApiCall,
    ApiError,
    JSONDict,
    bad_request,
    decode_json_fields,
    error_response,
    get_bool,
    get_int,
    get_str,
    ok_response,
)

__all__ = ["CONFLICT_POLL", "CONFLICT_WEBHOOK", "UpdateDelivery", "WebhookDelivery"]

log = logging.getLogger("bot.testing.fake_telegram")

CONFLICT_WEBHOOK = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
CONFLICT_POLL = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
_DEFAULT_EXCLUDED = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_SECRET_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(slots=True)
class WebhookDelivery:
    """One POST of an update to the webhook: ``status`` is None when the connection failed."""

    update_id: int
    status: int | None
    error: str | None = None
    attempt: int = 1
    at: float = field(default_factory=time.monotonic)


@dataclass(slots=True)
class _Webhook:
    url: str
    secret: str | None
    max_connections: int
    ip_address: str | None = None
    last_error_date: int | None = None
    last_error_message: str | None = None


class UpdateDelivery(BotApi):
    """Dispatch of recorded calls, ``getUpdates`` and the webhook, on top of the Bot API state.

    ``webhook_retry_delays`` are the pauses between delivery attempts of one update (Telegram
    retries for much longer; tests want seconds, not hours); after the last failure the update
    is dropped. ``webhook_timeout`` bounds each delivery POST.
    """

    def __init__(
        self,
        token: str = "123456:TEST-fake-token",
        bot_username: str = "parlour_bot",
        bot_name: str = "Parlour",
        privacy_mode: bool = True,
    ) -> None:
        super().__init__(token, bot_username, bot_name, privacy_mode)
        self.webhook_retry_delays: tuple[float, ...] = (0.05, 0.2, 0.5)
        self.webhook_timeout = 5.0
        self.webhook_deliveries: list[WebhookDelivery] = []
        self._webhook: _Webhook | None = None
        self._allowed_updates: list[str] | None = None
        self._poll_generation = 0
        self._in_flight = 0
        self._methods: dict[str, tuple[str, Handler]] = {}
        for name, handler in {
            **self._handlers(),
            "getUpdates": self._get_updates,
            "setWebhook": self._set_webhook,
            "deleteWebhook": self._delete_webhook,
            "getWebhookInfo": self._get_webhook_info,
        }.items():
            self._methods[name.lower()] = (name, handler)
        self._client: aiohttp.ClientSession | None = None
        self._worker: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    @property
    def webhook_statuses(self) -> list[int | None]:
        """The HTTP status of every webhook delivery attempt (None: connection failed)."""
        return [d.status for d in self.webhook_deliveries]

    async def _invoke(
        self, name: str, params: JSONDict, failure: ApiError | None = None
    ) -> web.Response:
        """Record and run one call (from HTTP or a webhook reply) and answer it."""
        entry = self._methods.get(name.lower())
        call = ApiCall(entry[0] if entry else name, params)
        self.calls.append(call)
        counted = call.method != "getUpdates"  # a long poll is not "the bot is busy"
        self._in_flight += counted
        try:
            if failure is not None:
                raise failure
            if entry is None:
                raise ApiError(404, "Not Found")
            queue = self._injected.get(entry[0].lower())
            if queue:
                raise queue.popleft()
            result = entry[1](params, call)
            if asyncio.iscoroutine(result):
                result = await result
        except ApiError as exc:
            call.ok, call.error = False, exc.description
            return error_response(exc)
        except Exception as exc:
            log.exception("fake Telegram handler failed")
            call.ok, call.error = False, f"Internal Server Error: {exc!r}"
            return error_response(ApiError(500, call.error))
        finally:
            self._in_flight -= counted
            self._bump()
        if isinstance(result, Described):
            return ok_response(result.result, result.description)
        return ok_response(result)

    async def _wait_change(self, seconds: float | None) -> None:
        """Sleep until the next state change (or ``seconds``, None for no limit)."""
        event = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await event.wait()

    # ---------------------------------------------------------------- getUpdates

    async def _get_updates(self, params: JSONDict, call: ApiCall) -> list[JSONDict]:
        if self._webhook is not None:
            raise ApiError(409, CONFLICT_WEBHOOK)
        offset = get_int(params, "offset")
        limit = min(max(get_int(params, "limit") or 100, 1), 100)
        timeout = max(get_int(params, "timeout") or 0, 0)
        allowed = params.get("allowed_updates")
        if isinstance(allowed, list):
            self._allowed_updates = [str(a) for a in allowed]
        self._poll_generation += 1
        mine = self._poll_generation
        self._bump()  # an older long poll wakes up and sees it was superseded
        if offset is not None and offset < 0:
            self._updates = self._updates[offset:]  # only the last -offset updates survive
        elif offset is not None:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        deadline = time.monotonic() + timeout
        while True:
            ready = self._deliverable()
            if ready or self._stopping.is_set():
                return ready[:limit]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            await self._wait_change(remaining)
            if self._webhook is not None:
                raise ApiError(409, CONFLICT_WEBHOOK)
            if self._poll_generation != mine:
                raise ApiError(409, CONFLICT_POLL)

    def take_updates(self, allowed_updates: list[str] | None = None) -> list[JSONDict]:
        """The pending updates a ``getUpdates`` with these ``allowed_updates`` would return,
        confirmed at once: for a bot whose dispatcher a test feeds in-process, not polling.

        Same filtering and order as the long poll; with a webhook set, the same conflict.
        """
        if self._webhook is not None:
            raise RuntimeError(CONFLICT_WEBHOOK)
        if allowed_updates is not None:
            self._allowed_updates = list(allowed_updates)
        ready = self._deliverable()
        self._updates.clear()  # all of them were deliverable: the rest were dropped
        self._bump()
        return ready

    def _deliverable(self) -> list[JSONDict]:
        """Pending updates of the allowed types; other types are dropped, as Telegram does."""
        allowed = set(self._allowed_updates or ())

        def wanted(update: JSONDict) -> bool:
            kinds = set(update) - {"update_id"}
            return bool(kinds & allowed) if allowed else not kinds <= _DEFAULT_EXCLUDED

        self._updates = [u for u in self._updates if wanted(u)]
        return list(self._updates)

    # ------------------------------------------------------------------- webhook

    async def _set_webhook(self, params: JSONDict, call: ApiCall) -> Described:
        url = (get_str(params, "url") or "").strip()
        if not url:
            return await self._delete_webhook(params, call)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        secret = get_str(params, "secret_token")
        if secret is not None and not (0 < len(secret) <= 256 and set(secret) <= _SECRET_CHARS):
            raise bad_request("bad webhook: secret token contains unallowed characters")
        max_connections = get_int(params, "max_connections") or 40
        if not 1 <= max_connections <= 100:
            raise bad_request("bad webhook: max_connections must be between 1 and 100")
        if get_bool(params, "drop_pending_updates"):
            self._updates.clear()
        allowed = params.get("allowed_updates")
        if isinstance(allowed, list):
            self._allowed_updates = [str(a) for a in allowed]
        same = self._webhook is not None and self._webhook.url == url
        ip = get_str(params, "ip_address")
        self._webhook = _Webhook(url, secret, max_connections, ip)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._webhook_worker(), name="fake-telegram-webhook")
        self._bump()
        return Described(True, "Webhook is already set" if same else "Webhook was set")

    async def _delete_webhook(self, params: JSONDict, call: ApiCall) -> Described:
        if get_bool(params, "drop_pending_updates"):
            self._updates.clear()
        existed, self._webhook = self._webhook is not None, None
        self._bump()
        return Described(True, "Webhook was deleted" if existed else "Webhook is already deleted")

    async def _get_webhook_info(self, params: JSONDict, call: ApiCall) -> JSONDict:
        hook = self._webhook
        info: JSONDict = {
            "url": hook.url if hook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self._deliverable()),
        }
        if hook is not None:
            extra = {
                "ip_address": hook.ip_address or "127.0.0.1",
                "last_error_date": hook.last_error_date,
                "last_error_message": hook.last_error_message,
                "max_connections": hook.max_connections,
                "allowed_updates": self._allowed_updates,
            }
            info.update({k: v for k, v in extra.items() if v is not None})
        return info

    async def deliver_raw(self, update: JSONDict, secret: str | None = None) -> int:
        """POST ``update`` to the webhook with this secret header (none if None); the status."""
        if self._webhook is None or self._client is None:
            raise RuntimeError("no webhook is set (call setWebhook first) or the fake is stopped")
        headers = {"Content-Type": "application/json"}
        if secret is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = secret
        timeout = aiohttp.ClientTimeout(total=self.webhook_timeout)
        async with self._client.post(
            self._webhook.url, data=json.dumps(update).encode(), headers=headers, timeout=timeout
        ) as response:
            await response.read()
            return response.status

    async def _webhook_worker(self) -> None:
        """Deliver pending updates one at a time, in order, retrying failures a few times."""
        while not self._stopping.is_set() and self._webhook is not None:
            hook = self._webhook
            ready = self._deliverable()
            if not ready:
                await self._wait_change(None)
                continue
            update = ready[0]
            if await self._deliver(hook, update) and update in self._updates:
                self._updates.remove(update)
            self._bump()

    async def _deliver(self, hook: _Webhook, update: JSONDict) -> bool:
        """True when the update is done with (accepted, or dropped after the last retry)."""
        for attempt in range(1, len(self.webhook_retry_delays) + 2):
            status, error, reply = await self._post(hook, update)
            self.webhook_deliveries.append(
                WebhookDelivery(int(update["update_id"]), status, error, attempt)
            )
            if status is not None and 200 <= status < 300:
                if reply is not None:
                    await self._invoke(str(reply.pop("method")), reply)
                return True
            hook.last_error_date = int(time.time())
            hook.last_error_message = error
            if hook is not self._webhook:
                return False  # the webhook changed meanwhile: the update stays pending
            if attempt > len(self.webhook_retry_delays):
                break
            await asyncio.sleep(self.webhook_retry_delays[attempt - 1])
        return hook is self._webhook

    async def _post(
        self, hook: _Webhook, update: JSONDict
    ) -> tuple[int | None, str | None, JSONDict | None]:
        """One delivery: status (None if unreachable), Telegram-style error, the reply call."""
        assert self._client is not None
        headers = {"Content-Type": "application/json"}
        if hook.secret:
            headers["X-Telegram-Bot-Api-Secret-Token"] = hook.secret
        try:
            async with self._client.post(
                hook.url,
                data=json.dumps(update).encode(),
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self.webhook_timeout),
            ) as response:
                status, reason = response.status, response.reason or ""
                if not 200 <= status < 300:
                    await response.read()
                    error = f"Wrong response from the webhook: {status} {reason}".rstrip()
                    return status, error, None
                return status, None, await _reply_call(response)
        except TimeoutError:
            return None, "Read timeout expired", None
        except aiohttp.ClientError as exc:
            return None, f"Connection failed: {exc}", None


async def _reply_call(response: aiohttp.ClientResponse) -> JSONDict | None:
    """A method call answered in the webhook response body (JSON, or aiogram's multipart)."""
    params: JSONDict = {}
    if response.content_type == "multipart/form-data":
        async for part in aiohttp.MultipartReader.from_response(response):
            if isinstance(part, aiohttp.BodyPartReader) and part.name:
                params[part.name] = await part.text()
    else:
        body = await response.read()
        try:
            decoded = json.loads(body) if response.content_type == "application/json" else None
        except ValueError:
            decoded = None
        params = decoded if isinstance(decoded, dict) else {}
    if not params.get("method"):
        return None
    try:
        return decode_json_fields(params)
    except ApiError:
        return None
