"""The facade's contract tests, run against memory.client.Client through a real `memory serve` over HTTP.

The contract functions are imported from tests/contract and run unchanged with
``mem`` = a Client (a namespace of its own on one shared server). Bad-input
tables are replayed checking the error class and that nothing changed; the
server's validation words its messages its own way. What does not run here,
and why, is in EXCLUDED (the README lists the same limits).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memory import InvalidInputError, NotFoundError
from memory.client import Client

CONTRACT = Path(__file__).resolve().parents[2] / "contract"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"client_contract_{name}", CONTRACT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


INCLUDED = {
    "test_memories": [
        "test_batch_returns_ids_in_order", "test_batch_with_one_bad_entry_stores_nothing",
        "test_identical_content_in_same_scope_is_deduplicated", "test_update_rejects_bad_changes",
        "test_forget_removes_from_every_channel_and_keeps_history", "test_forget_all_is_scoped",
        "test_stats_counts", "test_history_of_unknown_id",
        "test_new_content_drops_the_keywords_and_entities_of_the_old",
    ],
    "test_recall": [
        "test_hits_carry_channel_scores", "test_lexical_only_and_vector_only_presets", "test_recall_is_deterministic",
        "test_recency_and_importance_break_otherwise_equal_scores", "test_scope_filters",
        "test_closed_facts_are_excluded",
    ],
    "test_bad_input": ["test_bad_list_arguments", "test_empty_batch_and_wrong_batch_type", "test_unknown_ids"],
}  # fmt: skip

#: Contract tests that cannot run through the client, and why.
EXCLUDED = {
    "test_remember_then_get_keeps_every_field": "remember over REST takes no source_ids",
    "test_update_records_before_and_after_and_reembeds": "needs vector_of (vectors are not served)",
    "test_update_metadata_only_keeps_vector": "needs vector_of",
    "test_list_filters_and_pagination": "list over REST has no metadata filter",
    "test_list_time_range": "moves the test clock; the server runs on real time",
    "test_metadata_types_are_not_confused": "list over REST has no metadata filter",
    "test_export_import_through_the_facade": "import_ and vector_of are not served",
    "test_namespaces_never_leak": "namespaces() lists every test's namespace on the shared server",
    "test_secret_items_need_clearance": "needs vector_of",
    "test_expired_items_never_come_back": "moves the test clock",
    "test_access_statistics_update": "moves the test clock",
    "test_vector_errors_are_vector_errors": "remember over REST takes no vector",
    "test_hostile_strings_are_literal": "list over REST has no metadata filter",
    "test_rejected_writes_change_nothing": "replayed below checking the error class (server words messages itself)",
    "test_bad_recall_arguments": "replayed below checking the error class",
    "test_wildcards_match_nothing_extra": "list over REST has no metadata filter",
    "test_query_syntax_is_not_interpreted": "asserts the 'default' namespace; each client test has its own",
}

#: Bad inputs the REST API accepts where the library refuses them (pydantic's lax coercion of JSON).
LENIENT = {"kwargs7-limit"}

for _module_name, _names in INCLUDED.items():
    _module = _load(_module_name)
    for _name in _names:
        _fn = getattr(_module, _name)
        assert inspect.isfunction(_fn)
        globals()[f"{_name}__{_module_name[5:]}"] = _fn
_bad = sys.modules["client_contract_test_bad_input"]


def _params(test: Any) -> list[Any]:
    (mark,) = [m for m in test.pytestmark if m.name == "parametrize"]
    return list(mark.args[1])


def test_every_contract_test_is_run_or_excluded_with_a_reason() -> None:
    for module_name in ("test_memories", "test_recall", "test_bad_input"):
        module = sys.modules.get(f"client_contract_{module_name}") or _load(module_name)
        names = {n for n, f in vars(module).items() if n.startswith("test_") and inspect.isfunction(f)}
        assert names <= set(INCLUDED.get(module_name, [])) | set(EXCLUDED), names - set(EXCLUDED)


@pytest.mark.parametrize(("content", "fields", "message"), _params(_bad.test_rejected_writes_change_nothing))
def test_rejected_writes_change_nothing_over_http(
    mem: Client, content: Any, fields: dict[str, Any], message: str
) -> None:
    mem.remember("existing memory")
    before = mem.stats()
    with pytest.raises(InvalidInputError):
        mem.remember(content, **fields)
    after = mem.stats()
    assert (after.total, after.ledger_entries) == (before.total, before.ledger_entries)


@pytest.mark.parametrize(("kwargs", "message"), _params(_bad.test_bad_recall_arguments))
def test_bad_recall_arguments_over_http(
    mem: Client, kwargs: dict[str, Any], message: str, request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.id in LENIENT:
        assert kwargs == {"query": "ok", "limit": "10"}  # the one known difference: "10" is coerced to 10
        assert mem.recall(**kwargs) == []
        return
    with pytest.raises(InvalidInputError):
        mem.recall(**kwargs)


def test_missing_ids_are_not_found(mem: Client) -> None:
    with pytest.raises(NotFoundError):
        mem.update("00000000-0000-7000-8000-000000000000", content="x")
