"""Job kinds named in ``bot`` itself, apart from the scheduler: a plugin that names its kind
(``plugins.reminders``) imports this, not apscheduler, so ``check-config`` can import the
plugin to validate its settings without loading the scheduler."""

from __future__ import annotations

__all__ = ["REMINDERS_KIND", "SCHEDULED_POSTS_KIND"]

REMINDERS_KIND = "reminders.fire"
"""The reminders plugin's job kind: named here so the admin API lists reminders without
importing the plugin (``bot`` imports no plugin). Its payload: ``id``, ``chat_key``,
``user_id``, ``user_name``, ``text``."""

SCHEDULED_POSTS_KIND = "schedules.post"
"""Scheduled posts' job kind (``bot.conversation.scheduled_posts``); its payload is
:meth:`bot.scheduling.posts.ScheduledPost.payload`."""
