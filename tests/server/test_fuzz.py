"""The OpenAPI schema fuzzed with schemathesis against the live server, every check on (issue 15, item 4).

Every operation, positive and negative cases: no 5xx, responses that conform to
the schema (status codes, content types, bodies), schema-invalid requests refused
and schema-valid requests accepted — the schemas advertise the limits the library
enforces (:mod:`memory.limits`). A schema-valid request may still be refused for a
rule that relates two fields or the stored data, which JSON Schema cannot say;
those rules are listed in ``server_helpers.SEMANTIC_RULES`` and a refusal must name one of them.
Then the stateful run follows the schema's links (a created memory through get,
update, history, links and forget).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis.checks import negative_data_rejection, positive_data_acceptance  # noqa: E402
from schemathesis.generation.modes import GenerationMode  # noqa: E402
from server_helpers import SEMANTIC_RULES, ThreadServer, start_rest  # noqa: E402

from memory.ids import utcnow  # noqa: E402
from memory.keys import new_key  # noqa: E402

EXAMPLES = int(os.environ.get("MEMORY_FUZZ_EXAMPLES", "6"))


def _semantic(detail: str) -> bool:
    return any(re.search(rule, detail) for rule in SEMANTIC_RULES)


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A live server with a few memories and a key for every namespace (so requests get past auth)."""
    mem, auth, app = start_rest(tmp_path_factory.mktemp("fuzz"))
    for i in range(5):
        mem.remember(f"fuzz seed memory {i}", namespace="default", tags=["seed"])
    record, token = new_key("fuzz", ["*"], now=utcnow(), allow_secrets=True)
    assert auth.store is not None
    auth.store.add(record)
    with ThreadServer(app) as server:
        yield server.url, token
    mem.close()


def _schema(url: str, token: str) -> Any:
    """The live schema, with the key as its authentication (so the fuzzer does not mutate it)."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")

    @schema.auth(refresh_interval=None)
    class _Key:
        def get(self, case: Any, context: Any) -> str:
            return token

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

    return schema


def _excluded(case: Any) -> list[Any]:
    """Checks replaced or not applicable: positive acceptance by ``_accepts_valid_data``; negative rejection in
    a query string, which has no JSON types (``tags=5`` is the tag "5", whatever type the fuzzer meant)."""
    if case.method in ("GET", "DELETE"):
        return [positive_data_acceptance, negative_data_rejection]
    return [positive_data_acceptance]


def _validate(response: Any, case: Any) -> None:
    """The response checks, but a 413: the request size limit refused the body before any schema check (a
    fuzzed batch can pass 8 MiB), a rejection schemathesis' negative-data check does not list."""
    if response.status_code == 413:
        assert response.json()["detail"].startswith("request bodies are limited to"), response.text
        return
    case.validate_response(response, excluded_checks=_excluded(case))


def _sent_as_generated(case: Any) -> bool:
    """False when a path parameter holds a percent escape: schemathesis puts path parameters in the URL without
    quoting ``%``, so a generated thread ``%10`` arrives as the control character U+0010, which the schema refuses
    (quoted, ``%2510``, it is accepted: ``test_rest.py::test_path_parameters_are_percent_decoded_once``)."""
    return all(unquote(str(value)) == str(value) for value in (case.path_parameters or {}).values())


def _accepts_valid_data(response: Any, case: Any, refused: Counter[str]) -> None:
    """schemathesis' positive_data_acceptance, except refusals that name a documented semantic rule."""
    if case.meta is None or case.meta.generation.mode is not GenerationMode.POSITIVE:
        return
    if not _sent_as_generated(case):
        return
    if response.status_code in (400, 422):
        detail = str(response.json().get("detail", ""))
        assert _semantic(detail), f"schema-valid request refused: {case.method} {case.path}: {detail}"
        refused[detail[:60]] += 1


@pytest.mark.slow
def test_every_operation_conforms(fuzz_target: tuple[str, str]) -> None:
    """Every operation of the OpenAPI schema, positive and negative, EXAMPLES each (MEMORY_FUZZ_EXAMPLES).

    The examples are derandomised so a CI run is repeatable; set MEMORY_FUZZ_RANDOM=1 (and a larger
    MEMORY_FUZZ_EXAMPLES) to explore new inputs on every run.
    """
    url, token = fuzz_target
    schema = _schema(url, token)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    statuses: Counter[int] = Counter()
    refused: Counter[str] = Counter()
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
                derandomize=not os.environ.get("MEMORY_FUZZ_RANDOM"),
            )
            def fuzz(case: Any) -> None:
                response = case.call()
                _validate(response, case)
                _accepts_valid_data(response, case, refused)
                statuses[response.status_code] += 1

            try:
                fuzz()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE  # nothing to make invalid (e.g. no parameters)
    # The fuzzing reached the handlers: successes and input errors both happened.
    assert statuses[200] + statuses[201] > 30 and statuses[422] > 30, statuses
    assert sum(refused.values()) < sum(statuses.values()) / 5, refused  # semantic refusals stay the exception


@pytest.mark.slow
def test_stateful_links(fuzz_target: tuple[str, str]) -> None:
    """Sequences that follow the schema's links: remember, then get/update/history/links/forget of that id."""
    url, token = fuzz_target
    schema = _schema(url, token)
    remember = schema["/v1/namespaces/{namespace}/memories"]["POST"]
    assert {"get", "update", "forget", "history", "link"} <= set(remember.definition.raw["responses"]["201"]["links"])
    refused: Counter[str] = Counter()

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            _validate(response, case)
            _accepts_valid_data(response, case, refused)

    Machine.run(
        settings=settings(
            max_examples=int(os.environ.get("MEMORY_FUZZ_STATEFUL_EXAMPLES", "10")),
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=not os.environ.get("MEMORY_FUZZ_RANDOM"),
        )
    )
