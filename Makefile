# `make demo` and `make test` set everything up themselves (a .venv in this folder).
.PHONY: setup demo lint test test-fast test-llm pg-start pg-stop bench-locomo bench-speed bench-context bench-tiers clean

VENV := .venv
STAMP := $(VENV)/.installed

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
test: $(STAMP) lint
	pgenv="$$(./scripts/pg.sh start)" && eval "$$pgenv" && export MEMORY_REQUIRE_POSTGRES=1 && \
	  { $(VENV)/bin/python -m pytest $(PYTEST_ARGS); rc=$$?; ./scripts/pg.sh stop; exit $$rc; }

pg-start: $(STAMP)
	./scripts/pg.sh start

pg-stop:
	./scripts/pg.sh stop

test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow"

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
	rm -rf $(VENV) build *.egg-info .pytest_cache
