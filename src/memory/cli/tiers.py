"""Hierarchical memory commands: ``memory tiers show|add|retrieve|consolidate|configure``."""

from __future__ import annotations

from typing import Any

import click

from memory.cli.common import emit_json, one_line, open_memory, parse_meta, print_table, short_id
from memory.tiers.types import TierSnapshot

__all__ = ["tiers"]

_AGENT = click.option("--agent", "-a", required=True, metavar="AGENT", help="The agent whose tiers these are.")
_USER = click.option("--user", "-u", required=True, metavar="USER", help="The user the agent talks with.")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of tables.")


@click.group()
def tiers() -> None:
    """Hierarchical memory (MemoryOS): STM pages, MTM segments with heat, personas, system memory."""


def _show_snapshot(snap: TierSnapshot) -> None:
    click.echo(f"namespace {snap.namespace}  agent {snap.agent}  user {snap.user}"
               + (f"  type {snap.agent_type}" if snap.agent_type else ""))  # fmt: skip
    c = snap.config
    click.echo(
        f"config: stm {c.stm_capacity}  mtm {c.mtm_capacity}  fscore>={c.fscore_threshold:g}  "
        f"heat {c.heat_alpha:g}/{c.heat_beta:g}/{c.heat_gamma:g} mu {c.recency_mu:g}s  hot>={c.heat_threshold:g}"
    )
    rows = [[p.created_at.isoformat(timespec="seconds"), one_line(p.query, 60), one_line(p.response, 60),
             one_line(p.meta_chain, 50)] for p in snap.stm]  # fmt: skip
    print_table(["time", "query", "response", "meta-chain"], rows, title=f"STM ({len(snap.stm)}/{c.stm_capacity})")
    rows = [[short_id(s.id), f"{h:.2f}", str(s.visits), str(s.interactions), str(len(s.pages)),
             ", ".join(s.keywords[:5]), one_line(s.summary, 60)] for s, h in snap.segments]  # fmt: skip
    print_table(["segment", "heat", "visits", "interactions", "pages", "keywords", "summary"], rows,
                title=f"MTM ({len(snap.segments)}/{c.mtm_capacity})")  # fmt: skip
    personas = [p for p in (snap.user_persona, *snap.objects) if p is not None]
    rows = [
        [
            p.type,
            p.identifier,
            ", ".join(f"{k}={v}" for k, v in sorted(p.profile.items())),
            one_line("; ".join(p.traits), 60),
            str(len(p.knowledge)),
            one_line(p.knowledge[-1] if p.knowledge else "", 60),
        ]
        for p in personas
    ]
    print_table(
        ["type", "identifier", "profile", "traits", "kb", "latest knowledge"], rows, title="LPM object personas"
    )
    if snap.agent_persona is not None:
        click.echo(f"agent persona {snap.agent}: " + (one_line("; ".join(snap.agent_persona.traits), 200) or "-"))
    rows = [[f"{e.importance:.2f}", e.source_agent, one_line(e.content, 80)] for e in snap.system]
    print_table(["importance", "from agent", "content"], rows, title=f"System memory ({len(snap.system)})")


@tiers.command("show")
@_AGENT
@_USER
@_JSON
@click.pass_context
def show(ctx: click.Context, agent: str, user: str, as_json: bool) -> None:
    """Display every tier of AGENT with USER: STM, segments with heat, personas, system memory.

    \b
    Example:
      memory tiers show --agent guide --user alice
    """
    with open_memory(ctx) as mem:
        snap = mem.tiers.show(agent=agent, user=user)
    if as_json:
        data = snap.model_dump(mode="json", exclude={"kind"})
        data["segments"] = [{**s.model_dump(mode="json", exclude={"vector", "pages"}), "heat": h,
                             "pages": [p.id for p in s.pages]} for s, h in snap.segments]  # fmt: skip
        data["stm"] = [p.model_dump(mode="json", exclude={"vector", "turn_vectors"}) for p in snap.stm]
        data["system"] = [e.model_dump(mode="json", exclude={"vector"}) for e in snap.system]
        emit_json(data)
        return
    _show_snapshot(snap)


@tiers.command("add")
@click.argument("query")
@click.argument("response", default="")
@_AGENT
@_USER
@click.option(
    "--no-consolidate", is_flag=True, help="Leave consolidation to the worker (`memory worker --jobs tiers`)."
)
@_JSON
@click.pass_context
def add(
    ctx: click.Context, query: str, response: str, agent: str, user: str, no_consolidate: bool, as_json: bool
) -> None:
    """Append one exchange (QUERY and the agent's RESPONSE) to the STM of AGENT with USER."""
    with open_memory(ctx) as mem:
        page = mem.tiers.add_page(query, response, agent=agent, user=user, consolidate=not no_consolidate)
    if as_json:
        emit_json(page.model_dump(mode="json", exclude={"vector", "turn_vectors"}))
    else:
        click.echo(f"page {page.id}  meta-chain: {page.meta_chain}")


@tiers.command("retrieve")
@click.argument("query")
@_AGENT
@_USER
@_JSON
@click.pass_context
def retrieve(ctx: click.Context, query: str, agent: str, user: str, as_json: bool) -> None:
    """Retrieve across tiers for QUERY: STM, top segments and pages, personas, system memory (counts a visit)."""
    with open_memory(ctx) as mem:
        found = mem.tiers.retrieve(query, agent=agent, user=user)
    if as_json:
        emit_json(found.model_dump(mode="json", exclude={"stm": {"__all__": {"vector", "turn_vectors"}},
                                                       "pages": {"__all__": {"page": {"vector", "turn_vectors"}}},
                                                       "system": {"__all__": {"vector"}}}))  # fmt: skip
    else:
        click.echo(found.to_text() or "(nothing stored)")


@tiers.command("consolidate")
@click.option("--agent", "-a", metavar="AGENT", help="Only this agent (default: every agent).")
@click.option("--user", "-u", metavar="USER", help="Only this user (default: every user).")
@_JSON
@click.pass_context
def consolidate(ctx: click.Context, agent: str | None, user: str | None, as_json: bool) -> None:
    """Run one consolidation pass: STM overflow → MTM, eviction, hot segments → personas → system memory."""
    with open_memory(ctx) as mem:
        report = mem.tiers.consolidate(agent=agent, user=user)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo("  ".join(f"{k} {v}" for k, v in report.to_dict().items()))


@tiers.command("configure")
@click.option("--agent", "-a", metavar="AGENT", help="Configure this agent.")
@click.option("--type", "agent_type", metavar="TYPE", help="Configure this agent type (with --agent: assign it).")
@click.option("--namespace-wide", is_flag=True, help="Configure every agent of the namespace (e.g. the "
              "system_promotion policy).")  # fmt: skip
@click.option("--set", "values", multiple=True, metavar="KEY=VALUE", callback=parse_meta,
              help="A setting, e.g. stm_capacity=10 (repeatable).")  # fmt: skip
@_JSON
@click.pass_context
def configure(ctx: click.Context, agent: str | None, agent_type: str | None, namespace_wide: bool,
              values: dict[str, Any] | None, as_json: bool) -> None:  # fmt: skip
    """Store tier settings for an agent, an agent type or the whole namespace; print the effective configuration.

    \b
    Examples:
      memory tiers configure --type support --set stm_capacity=10 --set heat_threshold=4
      memory tiers configure --agent guide --set auto_pages=true
      memory tiers configure --namespace-wide --set system_promotion=any   # allow personal facts (policy)
    """
    if agent is None and agent_type is None and not namespace_wide:
        raise click.UsageError("give --agent and/or --type, or --namespace-wide")
    if namespace_wide and (agent is not None or agent_type is not None):
        raise click.UsageError("--namespace-wide configures every agent: leave out --agent and --type")
    with open_memory(ctx) as mem:
        config = mem.tiers.configure(agent=agent, agent_type=agent_type, namespace_wide=namespace_wide,
                                     **(values or {}))  # fmt: skip
    if as_json:
        emit_json(config.model_dump(mode="json"))
    else:
        print_table(["setting", "value"], [[k, str(v)] for k, v in config.model_dump().items()])


@tiers.command("forget")
@_USER
@click.option("--agent", "-a", metavar="AGENT", help="Only what this agent holds (default: every agent).")
@_JSON
@click.pass_context
def forget(ctx: click.Context, user: str, agent: str | None, as_json: bool) -> None:
    """Delete the STM pages, segments and persona the tiers hold about USER (messages stay)."""
    with open_memory(ctx) as mem:
        deleted = mem.tiers.forget(user=user, agent=agent)
    if as_json:
        emit_json({"deleted": deleted})
    else:
        click.echo(f"deleted {deleted} tier records")


@tiers.group("system")
def system() -> None:
    """Shared system memory: list what the tiers promoted for every agent, withdraw entries."""


@system.command("list")
@click.option("--agent", "-a", metavar="AGENT", help="Only entries this agent contributed.")
@_JSON
@click.pass_context
def system_list(ctx: click.Context, agent: str | None, as_json: bool) -> None:
    """List the namespace's system memory, most important first.

    \b
    Example:
      memory tiers system list
    """
    with open_memory(ctx) as mem:
        entries = mem.tiers.system(source_agent=agent)
    if as_json:
        emit_json([e.model_dump(mode="json", exclude={"vector"}) for e in entries])
        return
    rows = [[e.id, f"{e.importance:.2f}", e.source_agent, e.created_at.isoformat(timespec="seconds"),
             one_line(e.content, 80)] for e in entries]  # fmt: skip
    print_table(["id", "importance", "from agent", "promoted", "content"], rows, title=f"System memory ({len(rows)})")


@system.command("withdraw")
@click.argument("ids", nargs=-1, required=True)
@_JSON
@click.pass_context
def system_withdraw(ctx: click.Context, ids: tuple[str, ...], as_json: bool) -> None:
    """Take system memory entries out by id (every agent stops seeing them).

    \b
    Example:
      memory tiers system withdraw 01J...
    """
    with open_memory(ctx) as mem:
        deleted = mem.tiers.withdraw(list(ids))
    if as_json:
        emit_json({"deleted": deleted})
    else:
        click.echo(f"withdrew {deleted} system memory entr{'y' if deleted == 1 else 'ies'}")
