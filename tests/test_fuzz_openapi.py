"""Property-based fuzzing of every operation of the live OpenAPI document.

Schemathesis generates requests from the app's own /openapi.json (valid and
invalid ones) and sends them through the WSGI app with an all-scopes key;
path ids point at objects seeded first, so the views' real work runs, not
only their 404s. Any 5xx fails, and so does any response whose status,
content type or body the document does not describe, and any request the
document calls valid that is refused (but for INEXPRESSIBLE below).

Bounded for CI: FUZZ_EXAMPLES examples per operation (default 12),
derandomized so every run sends the same requests. For a longer local run:
FUZZ_EXAMPLES=300 .venv/bin/pytest tests/test_fuzz_openapi.py
"""

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import ServerError

from agent_platform import create_app
from agent_platform.db import database
from agent_platform.migrate import apply_migrations
from agent_platform.services import keys
from conftest import ON_POSTGRESQL
from fuzz_seed import seed_workspace
from pg_server import PostgresServer

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


# Refusals of requests the document calls valid that an OpenAPI 3.0 document
# cannot express, by the field the 400 names and its reason. Anything else
# refused fails (positive_data_acceptance, whose expected statuses already
# take 404 and 409: an id that is not there, a name already taken).
INEXPRESSIBLE = [
    # Two query parameters: OpenAPI relates none. limit and per_page are one
    # setting, two different values are refused; a period starts before it ends.
    ("per_page", r"Give limit or per_page, not two different values"),
    ("from", r"must not be after to"),
    ("to", r"the period may span at most "),
    # Only DNS knows whether a webhook's or MCP server's host resolves, and
    # to a public address.
    ("url", r"refused: "),
    # Other stored objects: a message of this conversation, an intention of
    # this agent, a custom field of this workspace.
    ("reply_to_id", r"no such message in this conversation"),
    ("intention_id", r"no intention with this id belongs to this agent"),
    ("custom_field", r"no custom field has this name"),
    ("custom_fields", r"no custom field has this name"),
    # Header names (OpenAPI 3.0 has no propertyNames; the rule is described).
    ("headers", r".* is not a valid header name"),
    # An uploaded file's name (its extension).
    ("file", r"must be a .* file"),
    # Fields that apply to one kind of object only: a training's type, an
    # intention's or idle action's action, a rule's match type, a channel's
    # or identity's type, a custom field's field_type, a message's type. For
    # a PATCH the kind is the stored object's, which no document knows; for
    # a create each kind would be a schema of its own (oneOf), which the
    # descriptions spell out instead.
    ("title", r"does not apply to \w+ trainings"),
    ("question", r"does not apply to \w+ trainings"),
    ("answer", r"does not apply to \w+ trainings"),
    ("content", r"does not apply to \w+ trainings"),
    ("url", r"does not apply to \w+ trainings"),
    ("reply_text", r"does not apply to the action "),
    ("url", r"does not apply to the action "),
    ("tag", r"does not apply to the action "),
    ("target_agent_id", r"does not apply to the action "),
    ("options", r"not allowed for field_type "),
    ("options", r"required and non-empty for field_type "),
    ("settings", r"unknown setting for \w+; allowed: "),
    ("identities", r"must be (a|an) "),
    ("caption", r"Give text or caption, not both"),
    ("caption", r"a text message has text, not a caption"),
    ("text", r"Give text \(text messages\) or caption \(media\)"),
    (None, r"only media messages have it"),
    ("template", r"only template messages have it"),
    (None, r"a template message has its template only"),
    ("metadata", r"`template` is the template's own key here"),
    ("type", r"template messages are sent on WhatsApp channels only"),
    (None, r"required for "),  # MISSING_REQUIRED_FIELD of the kind chosen
    # A scoring rule's params are those of its kind, and a custom field
    # value is checked against the stored field's type (docs/sales.md).
    ("params", r"(does not apply to the kind |required when the kind changes|must )"),
    # Money: the decimal places a currency has, a new currency's value, and
    # its largest value (15 digits in minor units: 13 before the point in
    # a currency of 2 decimal places, 15 in one of none).
    ("value", r"(\w{3} has \d decimal places|required when the currency changes|must be at most )"),
    # The columns of the pipeline, each once; a column that moves to itself.
    ("column_ids", r"must list every column of the pipeline"),
    ("move_to", r"must be another column"),
    ("conversation_ids", r"must not repeat an id"),
    ("points", r"must not be 0"),
    # Appointments: times relative to now and to each other, opening hours
    # that end after they start, a conversation with the contact booked for.
    ("start_at", r"must be in the future"),
    ("start_at", r"must be within 10 years from now"),
    ("end_at", r"must be after start_at"),
    ("end_at", r"an appointment lasts at most 24 hours"),
    ("weekly_hours", r"end must be after start"),
    ("weekly_hours", r"intervals of a day must not overlap"),
    ("conversation_id", r"the conversation is with another contact"),
    # NUL (U+0000) in any text of any request (api/nul.py: PostgreSQL cannot
    # store it): one rule over every string, which OpenAPI 3.0 has no place for.
    (None, r"must not contain the NUL character"),
    # The time zones the server's tz database knows: listing them would make
    # the document change from host to host (and broke client generators).
    ("time_zone", r"unknown time zone"),
]


@schemathesis.check
def valid_requests_accepted(ctx, response, case):
    """positive_data_acceptance, but for the refusals above."""
    if response.status_code == 400 and _inexpressible(response.json()["error"]["message"]):
        return None
    return positive_data_acceptance(ctx, response, case)


def _inexpressible(message):
    field, _, reason = message.partition(": ")
    root = re.split(r"[.\[]", field)[0]
    return any(
        name in (None, root) and re.match(pattern, reason) for name, pattern in INEXPRESSIBLE
    )


CHECKS = [
    no_undocumented_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    valid_requests_accepted,
]
# The schema is generated from the app when the module is collected, so the
# app exists before any fixture: one app and database for the whole run, on
# the engine under test (on PostgreSQL a server of this module's own, as the
# session's is a fixture; stopped when the run ends, even one that collected
# this module without running it).
DIRECTORY = Path(tempfile.mkdtemp(prefix="fuzz-openapi-"))


def _database_settings():
    if not ON_POSTGRESQL:
        return {"DATABASE_PATH": str(DIRECTORY / "fuzz.db")}
    server = PostgresServer().start()
    atexit.register(server.stop)
    server.execute("CREATE DATABASE fuzz")
    return {"DATABASE_URL": server.url("fuzz")}


APP = create_app(
    {
        **_database_settings(),
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
