# `make demo` and `make test` set everything up themselves (a .venv in this folder).
.PHONY: setup demo test test-fast bench-locomo bench-speed bench-context clean

VENV := .venv
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml scripts/setup.sh
	./scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

test: $(STAMP)
	$(VENV)/bin/python -m pytest

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
