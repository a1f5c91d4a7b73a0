"""``/ambient on|off|reset|status`` (a group's admins): ambient mode in this chat.

``on`` and ``off`` override the chat's ``chats:`` preset until ``reset`` hands the choice back to
it; each change is in the audit trail (``history audit``), like ``/persona``. ``status`` (or no
argument) says whether it is on and why, the unprompted answers of the last hour, a cool-down
in progress and whether a model is asked before each answer.
"""

from __future__ import annotations

from bot.context import ChatContext
from bot.conversation.ambient import Ambient, AmbientStatus
from bot.conversation.commands import Commands
from bot.plugins.commands import CommandInfo, CommandResult

__all__ = ["AMBIENT_COMMAND", "add_ambient_command", "describe_status"]

AMBIENT_COMMAND = CommandInfo(
    "ambient",
    "Answer messages meant for me without an @ (/ambient on|off|reset|status)",
    admin_only=True,
)
_USAGE = "Usage: /ambient on|off|reset|status"
_SOURCES = {
    "chat": "set here with /ambient",
    "preset": "this chat's configured preset",
    "default": "the default",
}


def describe_status(status: AmbientStatus) -> str:
    lines = [f"Ambient mode is {'on' if status.on else 'off'} ({_SOURCES[status.source]})."]
    if status.on:
        lines.append(
            "I answer messages clearly meant for me without an @: my name said to me, a"
            " question from someone I just answered, a question replying to that exchange."
        )
    limits = status.limits
    lines.append(
        f"Unprompted answers in the last hour: {limits.answers_this_hour} of {status.max_per_hour}."
    )
    if limits.cooldown_left > 0:
        minutes = max(1, round(limits.cooldown_left / 60))
        lines.append(f"Quiet for about {minutes} more minute(s): someone told me to stop.")
    if status.classifier is not None:
        lines.append(
            f"Before each unprompted answer I ask {status.classifier} for a second opinion."
        )
    return "\n".join(lines)


def add_ambient_command(commands: Commands) -> None:
    ambient: Ambient = commands.service.ambient_mode

    async def handle(ctx: ChatContext, args: str) -> CommandResult:
        if ctx.is_private:
            return CommandResult(
                "Ambient mode is for groups: here I answer every message.", private=True
            )
        word = args.split()[0].lower() if args else "status"
        if word == "status":
            return CommandResult(describe_status(ambient.status(ctx)), private=True)
        if word not in ("on", "off", "reset"):
            return CommandResult(_USAGE, ok=False, private=True)
        await ambient.set(ctx, None if word == "reset" else word == "on")
        status = ambient.status(ctx)
        head = f"Ambient mode is {'on' if status.on else 'off'}"
        if word == "reset":  # back to what the preset or the default says
            head += f" ({_SOURCES[status.source]})"
        if status.on:
            text = (
                f"{head}: I answer messages clearly meant for me without an @ (at most"
                f" {status.max_per_hour} an hour). Tell me to stop and I keep quiet."
            )
        else:
            text = f"{head}: I answer only when addressed."
        return CommandResult(text)

    commands.register(AMBIENT_COMMAND, handle)
