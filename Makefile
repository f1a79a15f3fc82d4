# `make demo` and `make test` set everything up themselves (a .venv in this folder).
.PHONY: setup demo test test-fast pg-start pg-stop bench-locomo bench-speed bench-context clean

VENV := .venv
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml scripts/setup.sh
	./scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

# A real PostgreSQL (scripts/pg.sh) runs for the duration of the tests; the postgres
# tests never skip here (MEMORY_REQUIRE_POSTGRES=1) and the server stops even on failure.
test: $(STAMP)
	pgenv="$$(./scripts/pg.sh start)" && eval "$$pgenv" && export MEMORY_REQUIRE_POSTGRES=1 && \
	  { $(VENV)/bin/python -m pytest $(PYTEST_ARGS); rc=$$?; ./scripts/pg.sh stop; exit $$rc; }

pg-start: $(STAMP)
	./scripts/pg.sh start

pg-stop:
	./scripts/pg.sh stop

test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow"

bench-locomo: $(STAMP)
	$(VENV)/bin/memory bench locomo --data ../shared/bench/locomo_dev.json

bench-speed: $(STAMP)
	$(VENV)/bin/memory bench speed

bench-context: $(STAMP)
	$(VENV)/bin/memory bench context --data ../shared/bench/locomo_dev.json --budget 4000

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
