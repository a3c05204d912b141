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

test: $(VENV)/.installed
	$(BIN)/pytest

# The test files that pass on PostgreSQL so far, run there (a throwaway server
# of Debian's postgresql: tests/pg_server.py). PG_TESTS=... names others.
PG_TESTS ?= tests/test_postgresql.py tests/test_migrations_engines.py \
	tests/test_agents.py tests/test_minted_keys.py tests/test_keys_service.py tests/test_auth.py \
	tests/test_contacts.py tests/test_conversations.py tests/test_custom_fields.py \
	tests/test_channels.py tests/test_messages.py tests/test_request_pipeline.py \
	tests/test_errors.py tests/test_list_order.py tests/test_permissions.py tests/test_routes.py \
	tests/test_leads.py tests/test_credits.py tests/test_interactions.py tests/test_mcp.py \
	tests/test_fastsql.py tests/test_appointments.py \
	tests/test_postgresql_ops.py \
	tests/test_trainings.py tests/test_knowledge_matching.py tests/test_knowledge_vocabulary.py \
	tests/test_replies.py tests/test_replies_clarify.py tests/test_replies_clarify_one.py \
	tests/test_replies_openai.py tests/test_replies_unanswered.py tests/test_reply_thresholds.py \
	tests/test_routing.py tests/test_agent_activity.py \
	tests/test_opportunities.py tests/test_sales_events.py tests/test_sales_walkthrough.py \
	tests/test_appointment_reminders.py tests/test_service_appointments.py tests/test_billing.py \
	tests/test_service_billing.py tests/test_counts.py tests/test_pagination.py \
	tests/test_pagination_ties.py tests/test_page_memory.py tests/test_users_api.py \
	tests/test_web_sign_in.py tests/test_web_team.py tests/test_web_channels.py \
	tests/test_web_integrations.py tests/test_web_inbox_live.py tests/test_scope_variants.py \
	tests/test_hostile_input.py tests/test_system.py tests/test_ids.py tests/test_service_spec.py \
	tests/test_spec_coverage.py
test-postgresql: $(VENV)/.installed
	TEST_DATABASE_ENGINE=postgresql $(BIN)/pytest $(PG_TESTS)

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
