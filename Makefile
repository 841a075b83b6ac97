# ChangeLake front door. Every target sets up what it needs first.
#   make demo   land demo data and build every model on embedded Spark, printing what it built
#   make test   the whole test suite, as CI runs it: pytest, sqlfluff, ruff
#   make bench  the benchmark at 1M changes (BENCH_ARGS="--large" for 10M), writes docs/benchmark.md
#   make setup  only create/refresh the virtual environment
#   make browser  install Debian's chromium for the docs-site test, when missing (root + apt-get)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup browser demo bench test lint pytest clean

BENCH_ARGS ?=
# pytest processes: each starts one embedded Spark session of its own (its own metastore)
TEST_WORKERS ?= 2

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "chromium is missing and cannot be installed here (apt-get as root): the docs-site browser test will skip"; \
	  fi; }

demo: setup
	$(BIN)/changelake demo

bench: setup
	$(BIN)/changelake bench --write-docs $(BENCH_ARGS)

pytest: setup
	$(BIN)/pytest -n $(TEST_WORKERS) --maxschedchunk 1

lint: setup
	$(BIN)/ruff check python_udfs tests
	$(BIN)/ruff format --check python_udfs tests
	$(BIN)/sqlfluff lint models tests

test: setup browser lint pytest

clean:
	rm -rf .changelake target logs
