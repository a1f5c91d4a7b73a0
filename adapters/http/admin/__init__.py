"""The admin API (JSON, an admin token): :mod:`.chats` and :mod:`.chat_ops` (chats, history,
clear, reset, audit, memories; the dashboard calls the same operations), :mod:`.api` and
:mod:`.ops` (usage, plugins, MCP, reminders), :mod:`.openapi` (with :mod:`.openapi_parts` and
:mod:`.openapi_shapes`: the OpenAPI 3.1 document), :mod:`.schemas` (response bodies),
:mod:`.params` (query and path values read safely).
"""
