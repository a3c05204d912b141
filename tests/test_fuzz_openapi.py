"""Property-based fuzzing of every operation of the live OpenAPI document.

Schemathesis generates requests from the app's own /openapi.json (valid and
invalid ones) and sends them through the WSGI app with an all-scopes key;
path ids point at objects seeded first, so the views' real work runs, not
only their 404s. Any 5xx fails, and so does any response whose status,
content type or body the document does not describe.

Bounded for CI: FUZZ_EXAMPLES examples per operation (default 12),
derandomized so every run sends the same requests. For a longer local run:
FUZZ_EXAMPLES=300 .venv/bin/pytest tests/test_fuzz_openapi.py
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import ServerError

from agent_platform import create_app
from agent_platform.db import database
from agent_platform.migrate import apply_migrations
from agent_platform.services import keys
from fuzz_seed import seed_workspace

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))


@schemathesis.check
def no_undocumented_server_error(ctx, response, case):
    """A 500 is always a bug; another 5xx only where the operation documents
    it (502 when an MCP server or a network cannot be reached)."""
    status = response.status_code
    documented = str(status) in case.operation.definition.raw.get("responses", {})
    if status >= 500 and (status == 500 or not documented):
        raise ServerError(operation=case.operation.label, status_code=status)
    return None


CHECKS = [
    no_undocumented_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# The schema is generated from the app when the module is collected, so the
# app exists before any fixture: one app and database for the whole run.
DIRECTORY = Path(tempfile.mkdtemp(prefix="fuzz-openapi-"))
APP = create_app(
    {
        "DATABASE_PATH": str(DIRECTORY / "fuzz.db"),
        "SECRETS_KEY_FILE": str(DIRECTORY / "secrets.key"),
        # No test may reach the internet, and nothing listens on port 9:
        # seeded webhooks and MCP servers fail at once.
        "WHATSAPP_GRAPH_API_BASE": "http://127.0.0.1:9/unreachable",
        "REPLIES_OPENAI_BASE_URL": "http://127.0.0.1:9/unreachable",
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        "MCP_ALLOW_PRIVATE_URLS": True,
        # Generated requests come fast; the rate limit is tested elsewhere.
        "RATE_LIMIT_REQUESTS": 10_000_000,
    }
)
with APP.app_context():
    apply_migrations()
schema = schemathesis.openapi.from_wsgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def app_context():
    with APP.app_context():
        yield
    database.close_all()
    shutil.rmtree(DIRECTORY, ignore_errors=True)


@pytest.fixture
def target():
    """(all-scopes key, {path parameter: id of a seeded object}), in a new
    workspace for each operation: another operation's DELETE has not run there."""
    workspace_id = keys.create_workspace("Fuzzed").id
    _, raw_key = keys.create_key(workspace_id, "fuzz", keys.all_scopes())
    ids = seed_workspace(APP.test_client(), raw_key)
    ids["workspaceId"] = workspace_id
    return raw_key, ids


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_operation_conforms_to_its_document(case, target):
    raw_key, ids = target
    for name in case.path_parameters or {}:
        if name in ids:
            case.path_parameters[name] = ids[name]
    case.call_and_validate(headers={"x-api-key": raw_key}, checks=CHECKS)
