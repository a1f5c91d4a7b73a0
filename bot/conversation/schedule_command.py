"""``/schedule`` (admins): posts this chat gets on a schedule, set up, listed and cancelled.

::

    /schedule every monday 09:00 Europe/Berlin | summarise last week's discussion
    /schedule daily 08:30 | ask one question about the project
    /schedule once 2026-12-24 18:00 Europe/Berlin | wish everyone a merry Christmas
    /schedule            (or /schedule list)   this chat's scheduled posts
    /schedule cancel 3

The schedule's grammar is :mod:`bot.scheduling.recurrence`'s; the reply names the next run in
the schedule's own zone. Only the chat's admins may use it (``admin_only``: Telegram asks
``getChatMember``, Discord reads the member's permissions), or only the bot's admins with
``schedules.who: bot_admins``.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from bot.context import ChatContext
from bot.conversation.commands import Commands
from bot.conversation.scheduled_posts import ScheduledPosts
from bot.plugins.commands import CommandInfo, CommandResult
from bot.scheduling.posts import ScheduledPost, post_id_of
from bot.scheduling.recurrence import EXAMPLES, ScheduleError

__all__ = ["SCHEDULE_COMMAND", "add_schedule_command", "next_run_text"]

SCHEDULE_COMMAND = CommandInfo(
    "schedule",
    "Post here on a schedule (/schedule every monday 09:00 | prompt; list; cancel N)",
    admin_only=True,
    groups_only=True,
)
PRIVATE = "Scheduled posts are for group chats; in a private chat, ask me for a reminder."
USAGE = (
    "/schedule WHEN | PROMPT - run PROMPT at those times and post the answer here\n"
    f"  WHEN: {EXAMPLES.replace(', ', '; ')}\n"
    "/schedule list - this chat's scheduled posts\n"
    "/schedule cancel N - cancel one"
)
_SHOWN_PROMPT = 80  # characters of a prompt a list shows


def next_run_text(post: ScheduledPost) -> str:
    """The next run in the schedule's own zone: "Mon 2026-12-07 09:00 CET"."""
    if post.next_run is None:
        return "now"
    local = post.next_run.astimezone(ZoneInfo(post.recurrence.zone))
    clock = "%H:%M:%S" if local.second else "%H:%M"
    return f"{local:%a %Y-%m-%d} {local.strftime(clock)} {local.tzname()}"


def describe(posts: list[ScheduledPost]) -> str:
    if not posts:
        return "No posts are scheduled here. " + USAGE.split("\n", 1)[0]
    lines = [f"Scheduled posts here ({len(posts)}):"]
    for post in posts:
        prompt = post.prompt.replace("\n", " ")
        if len(prompt) > _SHOWN_PROMPT:
            prompt = prompt[: _SHOWN_PROMPT - 1].rstrip() + "…"
        lines.append(
            f"#{post.id} {post.recurrence.describe()}, next {next_run_text(post)}: {prompt}"
        )
    return "\n".join(lines)


class ScheduleCommand:
    def __init__(self, posts: ScheduledPosts) -> None:
        self.posts = posts

    async def handle(self, ctx: ChatContext, args: str) -> CommandResult:
        if ctx.is_private:  # whoever asks, whatever the verb: nothing to schedule here
            return CommandResult(PRIVATE, ok=False, private=True)
        if not self.posts.may_schedule(ctx):
            return CommandResult(
                "Only the bot's admins can schedule posts.", ok=False, private=True
            )
        verb, _, rest = args.partition(" ")
        if not args or (verb.lower() == "list" and not rest.strip()):
            return CommandResult(describe(self.posts.listed(ctx.chat_key)), private=True)
        if verb.lower() == "cancel":
            return await self._cancel(ctx, rest)
        if verb.lower() == "help" or "|" not in args:
            return CommandResult(USAGE, ok=False, private=True)
        when, _, prompt = args.partition("|")
        try:
            post = await self.posts.schedule(ctx, when, prompt)
        except ScheduleError as exc:
            return CommandResult(f"Not scheduled: {exc.chat_text}", ok=False, private=True)
        return CommandResult(
            f"Scheduled post #{post.id}: {post.recurrence.describe()}. Next:"
            f" {next_run_text(post)}. Cancel it with /schedule cancel {post.id}."
        )

    async def _cancel(self, ctx: ChatContext, text: str) -> CommandResult:
        post_id = post_id_of(text)
        if post_id is None:
            return CommandResult("Usage: /schedule cancel N", ok=False, private=True)
        post = await self.posts.cancel(post_id, ctx.chat_key, by=ctx.user_id, by_name=ctx.user_name)
        if post is None:
            return CommandResult(
                f"There is no scheduled post #{post_id} here (/schedule list shows them).",
                ok=False,
                private=True,
            )
        return CommandResult(f"Cancelled scheduled post #{post.id} ({post.recurrence.describe()}).")


def add_schedule_command(commands: Commands, posts: ScheduledPosts) -> None:
    """Register ``/schedule`` (only when ``schedules.enabled``)."""
    commands.register(SCHEDULE_COMMAND, ScheduleCommand(posts).handle)
