# `make demo` and `make test` set everything up themselves (a .venv in this folder).
.PHONY: setup demo lint test test-crewai test-fast test-ui test-llm pg-start pg-stop bench-locomo bench-speed bench-context bench-tiers clean

VENV := .venv
STAMP := $(VENV)/.installed
CREWAI_VENV := .venv-crewai
CREWAI_TESTS := tests/integrations/crewai

$(STAMP): pyproject.toml scripts/setup.sh
	./scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

# Style and types first (ruff lint + format check, mypy --strict on src/memory; under a
# minute), so CI refuses code that drifts from them.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/ruff format --check src tests
	$(VENV)/bin/mypy

# A real PostgreSQL (scripts/pg.sh) runs for the duration of the tests; the postgres
# tests never skip here (MEMORY_REQUIRE_POSTGRES=1) and the server stops even on failure.
# The CrewAI integration tests run after the rest in their own environment (.venv-crewai, built by
# scripts/crewai-env.sh: CrewAI's mcp/openai pins conflict with the server and openai-agents extras).
test: $(STAMP) lint
	./scripts/crewai-env.sh
	pgenv="$$(./scripts/pg.sh start)" && eval "$$pgenv" && export MEMORY_REQUIRE_POSTGRES=1 MEMORY_REQUIRE_BROWSER=1 && \
	  { $(VENV)/bin/python -m pytest --ignore=$(CREWAI_TESTS) $(PYTEST_ARGS); rc=$$?; \
	    $(CREWAI_VENV)/bin/python -m pytest $(CREWAI_TESTS); rc2=$$?; \
	    ./scripts/pg.sh stop; [ $$rc -ne 0 ] && exit $$rc; exit $$rc2; }

# Only the CrewAI integration tests (postgres ones skip unless MEMORY_TEST_DSN is set).
test-crewai:
	./scripts/crewai-env.sh
	$(CREWAI_VENV)/bin/python -m pytest $(CREWAI_TESTS)

pg-start: $(STAMP)
	./scripts/pg.sh start

pg-stop:
	./scripts/pg.sh stop

test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow" --ignore=$(CREWAI_TESTS)

# The web inspector in headless Chromium (part of `make test` too); screenshots land in docs/ui/.
test-ui: $(STAMP)
	MEMORY_REQUIRE_BROWSER=1 $(VENV)/bin/python -m pytest tests/ui tests/server/test_inspect_ops.py

# A real LLM end to end: builds (once, cached outside the repo) and starts llama.cpp's server with
# Gemma 3 270M, runs the tests marked `llm` through the openai provider, then stops the server.
test-llm: $(STAMP)
	./scripts/llm-server.sh start
	MEMORY_TEST_LLM_URL=$$(./scripts/llm-server.sh url) $(VENV)/bin/python -m pytest -m llm -v -s tests/llm_real; \
		status=$$?; ./scripts/llm-server.sh stop; exit $$status

bench-locomo: $(STAMP)
	$(VENV)/bin/memory bench locomo --data ../shared/bench/locomo_dev.json

bench-speed: $(STAMP)
	$(VENV)/bin/memory bench speed

bench-context: $(STAMP)
	$(VENV)/bin/memory bench context --data ../shared/bench/locomo_dev.json --budget 4000

bench-tiers: $(STAMP)
	nice -n 10 $(VENV)/bin/memory bench tiers --data ../shared/bench/locomo_dev.json

clean:
	rm -rf $(VENV) $(CREWAI_VENV) build *.egg-info .pytest_cache
