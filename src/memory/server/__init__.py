"""Interfaces over the network: one operation registry, served as MCP tools and REST routes.

:mod:`memory.server.ops` lists every operation once (pydantic input and
output models, a description, a thin call into :class:`~memory.Memory`);
:mod:`memory.server.rest` (FastAPI) and :mod:`memory.server.mcp` (the
official MCP SDK) derive their routes, tools and JSON schemas from it.
:mod:`memory.server.auth` turns API keys into a :class:`~memory.keys.Caller`.
"""
