"""The admin dashboard (server-rendered pages, a session cookie): :mod:`.pages` (chats, a chat,
usage, memories, reminders, tools), :mod:`.playground` (talk to the bot, streamed),
:mod:`.status` (adapters, MCP servers, doctor's rows, the last warnings), :mod:`.login`
(``/login``, ``/logout``), :mod:`.render` (Jinja2, autoescaped, and the static files),
:mod:`.markdown` (answers as HTML that cannot run),
:mod:`.usage_chart`; ``templates/`` and ``static/`` ship in this package.
"""
