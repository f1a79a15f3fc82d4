"""Per-agent and per-agent-type tier configuration: stored overrides resolved over the defaults.

Resolution: :class:`~memory.tiers.types.TierConfig` defaults < the
namespace's overrides < the agent type's overrides < the agent's own
overrides. Overrides are stored in the tier store under ``namespace``,
``type:<name>`` and ``agent:<name>`` (the agent's record
also names its type under ``agent_type``). Every write is validated as a
whole config first; a bad value raises InvalidInputError and stores nothing.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from memory.backends.tiers import TierStore
from memory.errors import InvalidInputError
from memory.tiers.scoring import reference_of
from memory.tiers.types import CONFIG_FIELDS, TierConfig

__all__ = ["resolve_config", "store_config", "agent_type_of", "NAMESPACE_KEY"]


_FUNCTIONS = ("fscore_function", "heat_function")
#: The key of the namespace-wide overrides.
NAMESPACE_KEY = "namespace"


def _validated(values: dict[str, Any]) -> TierConfig:
    unknown = sorted(set(values) - set(CONFIG_FIELDS))
    if unknown:
        raise InvalidInputError(f"unknown tier setting(s) {unknown}; known: {', '.join(CONFIG_FIELDS)}")
    for name in _FUNCTIONS:
        if name in values:
            values = {**values, name: reference_of(values[name])}
    try:
        return TierConfig(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InvalidInputError(f"invalid tier configuration: {problems}") from None


def agent_type_of(store: TierStore, namespace: str, agent: str) -> str | None:
    """The type the agent was configured with, or None."""
    record = store.get_config(namespace, f"agent:{agent}") or {}
    value = record.get("agent_type")
    return value if isinstance(value, str) else None


def resolve_config(store: TierStore, namespace: str, agent: str | None, agent_type: str | None = None) -> TierConfig:
    """The effective configuration of ``agent`` (or of ``agent_type`` alone): defaults < namespace < type < agent."""
    agent_record = dict(store.get_config(namespace, f"agent:{agent}") or {}) if agent else {}
    kind = agent_type or agent_record.pop("agent_type", None)
    agent_record.pop("agent_type", None)
    type_record = store.get_config(namespace, f"type:{kind}") or {} if kind else {}
    namespace_record = store.get_config(namespace, NAMESPACE_KEY) or {}
    return _validated({**namespace_record, **type_record, **agent_record})


def store_config(
    store: TierStore,
    namespace: str,
    *,
    agent: str | None,
    agent_type: str | None,
    values: dict[str, Any],
    namespace_wide: bool = False,
) -> TierConfig:
    """Merge ``values`` into the stored overrides of ``agent``, of ``agent_type`` or (``namespace_wide``) of the
    namespace; returns the effective config."""
    if agent is None and agent_type is None and not namespace_wide:
        raise InvalidInputError("configure needs agent=, agent_type= or namespace_wide=True")
    values = {k: (reference_of(v) if k in _FUNCTIONS else v) for k, v in values.items()}
    _validated(values)  # the values on their own
    if namespace_wide:
        record = {**(store.get_config(namespace, NAMESPACE_KEY) or {}), **values}
        effective = _validated(record)
        store.set_config(namespace, NAMESPACE_KEY, record)
        return effective
    if agent is not None:
        key = f"agent:{agent}"
        record = {**(store.get_config(namespace, key) or {}), **values}
        if agent_type is not None:
            record["agent_type"] = agent_type
        kind = record.get("agent_type")
        type_record = store.get_config(namespace, f"type:{kind}") or {} if kind else {}
        effective = _validated({**type_record, **{k: v for k, v in record.items() if k != "agent_type"}})
        store.set_config(namespace, key, record)
        return effective
    assert agent_type is not None
    key = f"type:{agent_type}"
    record = {**(store.get_config(namespace, key) or {}), **values}
    effective = _validated(record)
    store.set_config(namespace, key, record)
    return effective
