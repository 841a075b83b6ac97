# ChangeLake front door. Every target sets up what it needs first.
#   make demo   land demo data and build every model on embedded Spark, printing what it built
#   make test   the whole test suite, as CI runs it: pytest, sqlfluff, ruff
#   make setup  only create/refresh the virtual environment

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint pytest clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/changelake demo

pytest: setup
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check python_udfs tests
	$(BIN)/ruff format --check python_udfs tests
	$(BIN)/sqlfluff lint models tests

test: setup lint pytest

clean:
	rm -rf .changelake target logs
