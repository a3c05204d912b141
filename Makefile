# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-postgresql lint format bench clean mutate

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall whenever pyproject.toml changes. Running needs the package only
# (.runtime); tests and linting add the test extra (.installed).
$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(VENV)/.runtime $@

# `make run` reads ./config.toml when there is one (else the built-in
# defaults); CONFIG=path names another, PORT=8081 another port.
CONFIG ?= $(wildcard config.toml)
run: $(VENV)/.runtime
	$(BIN)/agent-platform serve $(if $(CONFIG),--config $(CONFIG)) $(if $(PORT),--port $(PORT))

# The suite runs in three parts (docs/testing.md): the test files spread over
# a process per CPU (pytest-xdist, at most 4; TEST_JOBS=1 for one), each file
# whole in one process; then the fuzzing, its items spread one by one (they
# share one node id, which file scheduling would run once); then TIMED_TESTS
# one at a time: they measure how long other clients wait beside a request,
# which a neighbour busy on the same CPUs would blur.
# The CPUs this process may use (Linux), else the machine's (macOS).
TEST_JOBS ?= $(shell $(PYTHON) -c 'import os; print(min(4, len(os.sched_getaffinity(0)) \
	if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))')
ALL_TESTS := $(wildcard tests/test_*.py)
FUZZ_TESTS := tests/test_fuzz_openapi.py
TIMED_TESTS := $(wildcard tests/test_serving*.py)
# $(call pytest_on,ENVIRONMENT,OPTIONS,FILES): nothing when FILES is empty
# (pytest without files would run them all).
pytest_on = $(if $(3),$(1) $(BIN)/pytest $(2) $(3))
# $(call suite,ENVIRONMENT,FILES): the three parts over FILES.
define suite
	$(call pytest_on,$(1),-n $(TEST_JOBS) --dist loadfile,$(filter-out $(FUZZ_TESTS) $(TIMED_TESTS),$(2)))
	$(call pytest_on,$(1),-n $(TEST_JOBS),$(filter $(FUZZ_TESTS),$(2)))
	$(call pytest_on,$(1),,$(filter $(TIMED_TESTS),$(2)))
endef

test: $(VENV)/.installed
	$(call suite,,$(ALL_TESTS))

# The suite again on PostgreSQL (a throwaway server of Debian's postgresql:
# tests/pg_server.py), but for the files that do not use the engine under
# test (browser and served tests start servers on SQLite files of their own;
# the cluster, PostgreSQL and migration-set tests run there in `make test`).
# A test that checks SQLite itself is marked sqlite_only. PG_TESTS=... names others.
PG_SKIP := $(wildcard tests/*_browser.py) $(TIMED_TESTS) tests/test_web_inbox_e2e.py \
	tests/test_generated_clients.py tests/test_cluster.py tests/test_postgresql.py \
	tests/test_postgresql_ops.py tests/test_migrations_engines.py
PG_TESTS ?= $(filter-out $(PG_SKIP),$(ALL_TESTS))
test-postgresql: $(VENV)/.installed
	$(call suite,TEST_DATABASE_ENGINE=postgresql,$(PG_TESTS))

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .pytest_cache

# Mutation testing of the core modules (docs/testing.md): slow, so neither in
# `make test` nor in CI. mutmut names modules after a src/ root, so it runs on
# a copy of the tree in build/mutate whose source root is src/ (tests/conftest.py
# points the services the tests start as processes at the mutated copy too).
MUTATE := build/mutate
mutate: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[mutate]'
	rm -rf $(MUTATE) && mkdir -p $(MUTATE)
	cp -r platform $(MUTATE)/src
	cp -r tests bench migrations deploy app.py gunicorn.conf.py config.example.toml README.md CHANGELOG.md $(MUTATE)/
	[ ! -d docs ] || cp -r docs $(MUTATE)/
	sed 's/^pythonpath = \["platform", "."\]/pythonpath = ["src", "."]/' pyproject.toml > $(MUTATE)/pyproject.toml
	cd $(MUTATE) && $(CURDIR)/$(BIN)/mutmut run --max-children 2 || true
	cd $(MUTATE) && $(CURDIR)/$(BIN)/python $(CURDIR)/tests/mutation_score.py
