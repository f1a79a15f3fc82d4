"""The OpenAPI schema fuzzed with schemathesis against the live server: no request may cause a 5xx."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.generation.modes import GenerationMode  # noqa: E402
from server_helpers import ThreadServer, start_rest  # noqa: E402

from memory.ids import utcnow  # noqa: E402
from memory.keys import new_key  # noqa: E402


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A live server with a few memories and a key for every namespace (so requests get past auth)."""
    mem, auth, app = start_rest(tmp_path_factory.mktemp("fuzz"), max_body_bytes=64 * 1024)
    for i in range(5):
        mem.remember(f"fuzz seed memory {i}", namespace="default", tags=["seed"])
    record, token = new_key("fuzz", ["*"], now=utcnow(), allow_secrets=True)
    assert auth.store is not None
    auth.store.add(record)
    with ThreadServer(app) as server:
        yield server.url, token
    mem.close()


@pytest.mark.slow
def test_no_server_errors(fuzz_target: tuple[str, str]) -> None:
    """Every operation of the OpenAPI schema, positive and negative cases, 20 examples each (MEMORY_FUZZ_EXAMPLES).

    The examples are derandomised so a CI run is repeatable; set MEMORY_FUZZ_RANDOM=1 (and a larger
    MEMORY_FUZZ_EXAMPLES) to explore new inputs on every run.
    """
    url, token = fuzz_target
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    headers = {"Authorization": f"Bearer {token}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    cases = [(op, mode) for op in operations for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)]
    statuses: Counter[int] = Counter()
    for operation, mode in cases:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=int(os.environ.get("MEMORY_FUZZ_EXAMPLES", "20")),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=not os.environ.get("MEMORY_FUZZ_RANDOM"),
        )
        def fuzz(case: Any) -> None:
            response = case.call_and_validate(headers=headers, checks=[not_a_server_error])
            statuses[response.status_code] += 1

        try:
            fuzz()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE  # nothing to make invalid (e.g. no parameters)
    # The fuzzing reached the handlers: successes and input errors both happened.
    assert statuses[200] + statuses[201] > 50 and statuses[422] > 50, statuses
