"""``memory repl`` (and ``memory -I``): the JSON REPL over stdin/stdout (memory.server.repl)."""

from __future__ import annotations

import sys

import click

from memory.cli.common import open_memory

__all__ = ["repl"]


@click.command()
@click.option(
    "--allow-secrets", is_flag=True, help="Clear the session for secret memories (as `memory mcp --allow-secrets`)."
)
@click.option("--read-only", is_flag=True, help="Refuse operations that change memories.")
@click.pass_context
def repl(ctx: click.Context, allow_secrets: bool, read_only: bool) -> None:
    """Answer JSON requests from stdin, one per line, with one JSON line each on stdout.

    The operations are the MCP tools' (same names, arguments and rules); send
    {"op": "operations"} for the list with argument schemas. A request is
    {"id": ..., "op": NAME, "args": {...}} ("namespace" inside args picks
    another namespace); the answer is {"id": ..., "ok": true, "result": ...}
    or {"id": ..., "ok": false, "error": {"type": ..., "message": ...}}. Bad
    lines get an error answer and the session goes on; end of input ends it.
    `memory -I` is the same with the defaults; `memory -V -I` also echoes
    every request and answer on stderr.

    \b
    Examples:
      echo '{"op": "remember", "args": {"content": "Alice likes tea"}}' | memory -I
      memory repl --read-only < requests.jsonl > answers.jsonl
    """
    from memory.keys import Caller
    from memory.server.repl import run

    with open_memory(ctx) as mem:
        # The local user, as over MCP stdio: every namespace, the default one when a request names none.
        clearance = "secret" if allow_secrets else "private"
        caller = Caller(namespaces=None, clearance=clearance, read_only=read_only, default_namespace=mem.namespace)
        run(mem, caller, sys.stdin, sys.stdout)
