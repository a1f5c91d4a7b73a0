"""MCP: tools from Model Context Protocol servers, beside the plugins' tools (``mcp.servers``).

:mod:`bot.mcp.manager` starts the servers and keeps their tools in the registry;
:mod:`bot.mcp.connection` keeps one server connected; :mod:`bot.mcp.catalog` turns its tool
list into the registry's tools (names, schemas, permissions); :mod:`bot.mcp.results` turns a
result into what the model reads. The SDK is imported only when a server is configured.
"""
