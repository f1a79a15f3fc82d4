"""Interfaces over the network: one operation registry, served as MCP tools and REST routes.

:mod:`memory.server.ops` lists every operation once (pydantic input and
output models, a description, a thin call into :class:`~memory.Memory`);
:mod:`memory.server.rest` (FastAPI) and :mod:`memory.server.mcp` (the
official MCP SDK) derive their routes, tools and JSON schemas from it.
:mod:`memory.server.auth` turns API keys into a :class:`~memory.keys.Caller`.
"""

# The web inspector's operations live in their own module, which registers them in
# memory.server.ops's registry when imported; importing it here (the package is imported before
# any of its modules) keeps the registry complete for every importer without a circle.
from memory.server import ops_inspect as _ops_inspect  # noqa: E402,F401
