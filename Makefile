# The course's entry points. `make lab` opens the course; `make test` runs every test.
# Both build the environment (.venv, and apt packages as root) when it is missing.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)
PORT ?= 8888
UNIT ?=
SUBMISSIONS ?=
ROSTER ?=
OUT ?= build/grades
WORKERS ?=

.PHONY: setup lab test proof release grade bench clean

setup:
	@bash tools/setup.sh

## Open the student release in JupyterLab on 127.0.0.1.
lab: setup
	@$(BIN)/python -m autograder.release --if-stale
	@echo "Starting JupyterLab on course/ — open the URL printed below (127.0.0.1:$(PORT))."
	@$(BIN)/jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --notebook-dir=course \
		$$( [ "$$(id -u)" = 0 ] && echo --ServerApp.allow_root=True )

## Run the whole test suite (library, notebooks, grader, browser); prints its wall time, and where it went with
## `python benchmarks/suite.py` (per-test durations: build/test-durations.json).
test:
	@start=$$(date +%s); bash tools/setup.sh --test || exit $$?; setup_end=$$(date +%s); \
	INFOPT_SETUP_S=$$((setup_end - start)) $(BIN)/python -m pytest -n $${TEST_WORKERS:-2} --dist loadgroup $(PYTEST_ARGS); \
	rc=$$?; end=$$(date +%s); \
	echo "make test: wall time $$((end - start)) s ($$(( (end - start) / 60 )) min $$(( (end - start) % 60 )) s; setup $$((setup_end - start)) s, tests $$((end - setup_end)) s); exit $$rc"; \
	echo "make test: per-test durations in build/test-durations.json; the slowest and the seconds per unit: .venv/bin/python benchmarks/suite.py"; \
	exit $$rc

## The full proof of a unit before it is called done (every unit without UNIT=): its notebook tests with every stored
## wrong answer under 20 grading seeds and through nbgrader, its browser test, and the mutation benchmark.
proof:
	@bash tools/setup.sh --test || exit $$?; $(BIN)/python -m tests.notebooks.proof $(if $(UNIT),--unit $(UNIT))

## Rebuild course/ (the student release) from solutions/.
release: setup
	@$(BIN)/python -m autograder.release $(if $(UNIT),--unit $(UNIT))

## Autograde a folder of submissions: make grade UNIT=01_graphs_ir SUBMISSIONS=path [ROSTER=roster.csv] [OUT=dir]
grade: setup
	@$(BIN)/python -m autograder.grade --unit "$(UNIT)" --submissions "$(SUBMISSIONS)" \
		$(if $(ROSTER),--roster "$(ROSTER)") --out "$(OUT)" $(if $(WORKERS),--workers $(WORKERS))

## Run the benchmarks (prints ratio tables).
bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf build .pytest_cache
