"""The OpenAPI document as client generators read it: named operations, a
description and a relative server, and the same bytes on every host."""

import json
import os
import subprocess
import sys
from pathlib import Path
from zoneinfo import available_timezones

from agent_platform.api import operation_ids
from conftest import assert_error

ROOT = Path(__file__).resolve().parents[1]
OPERATIONS = ["get", "post", "put", "patch", "delete"]

# Prints /openapi.json as served to a request for `host`, in a process of
# its own: a process builds the document once (api/__init__.py).
PRINT_DOCUMENT = """
import sys
from agent_platform import create_app
app = create_app({"DATABASE_PATH": sys.argv[1]})
response = app.test_client().get("/openapi.json", base_url=sys.argv[2])
sys.stdout.buffer.write(response.data)
"""


def operations(spec):
    for path, methods in spec["paths"].items():
        for method in OPERATIONS:
            if method in methods:
                yield method, path, methods[method]


def test_every_operation_has_the_operation_id_on_record(client):
    spec = client.get("/openapi.json").get_json()
    rows = sorted(
        f"{op['operationId']} {method.upper()} {path}" for method, path, op in operations(spec)
    )
    recorded = (ROOT / "tests/data/operation_ids.txt").read_text().splitlines()
    # A changed id renames a function in every generated client: on purpose only.
    assert rows == recorded
    ids = [row.split()[0] for row in rows]
    assert len(set(ids)) == len(ids) == 168


def test_each_override_names_an_operation_and_differs_from_the_rule(client):
    spec = client.get("/openapi.json").get_json()
    ids = {op["operationId"] for _, _, op in operations(spec)}
    for key, written in operation_ids.OVERRIDES.items():
        blueprint, view, method = key.split(".")
        assert written in ids, key
        without = dict(operation_ids.OVERRIDES)
        del without[key]
        ruled = operation_ids.OVERRIDES
        try:
            operation_ids.OVERRIDES = without
            assert operation_ids.operation_id(blueprint, view, method) != written, key
        finally:
            operation_ids.OVERRIDES = ruled


def test_the_rule_names_views_by_method():
    assert operation_ids.operation_id("agents", "Agents", "get") == "listAgents"
    assert operation_ids.operation_id("agents", "Agents", "post") == "createAgent"
    assert operation_ids.operation_id("leads", "Opportunities", "post") == "createOpportunity"
    assert operation_ids.operation_id("agents", "AgentById", "patch") == "updateAgent"
    assert operation_ids.operation_id("agents", "ActivateAgent", "post") == "activateAgent"
    assert operation_ids.operation_id("x", "AgentAvailability", "put") == "setAgentAvailability"


def test_the_document_describes_the_api_and_a_relative_server(client):
    spec = client.get("/openapi.json").get_json()
    description = spec["info"]["description"]
    assert "Authorization: Bearer" in description and "x-api-key" in description
    assert "/docs" in description and "docs/api.md" in description
    assert spec["servers"] == [{"url": "/", "description": "The server this document came from"}]


def test_no_time_zone_list_in_the_document(client):
    spec = client.get("/openapi.json").get_json()
    zones = available_timezones()

    def enums(node):
        if isinstance(node, dict):
            if "enum" in node:
                yield node["enum"]
            for value in node.values():
                yield from enums(value)
        elif isinstance(node, list):
            for value in node:
                yield from enums(value)

    assert not [values for values in enums(spec) if zones & set(map(str, values))]
    put = spec["components"]["schemas"]["AppointmentSettingsPut"]["properties"]["time_zone"]
    assert put == {
        "type": "string",
        "description": "An IANA time zone name such as Europe/Lisbon (default UTC): "
        "appointment times are shown and opening hours read in it",
        "example": "Europe/Lisbon",
    }


def test_the_server_still_checks_time_zones_against_zoneinfo(caller):
    for name in ("Mars/Olympus", "localtime", "europe/lisbon", ""):
        refused = caller.put("/v1/appointments/settings", json={"time_zone": name})
        assert_error(refused, 400, "VALIDATION_ERROR", "time_zone: unknown time zone: give an IANA")
    kept = caller.get("/v1/appointments/settings").get_json()["data"]["time_zone"]
    assert kept == "UTC"
    changed = caller.put("/v1/appointments/settings", json={"time_zone": "Asia/Kathmandu"})
    assert changed.get_json()["data"]["time_zone"] == "Asia/Kathmandu"


def test_the_document_is_the_same_on_every_host(tmp_path):
    """Two processes unlike in time zone, tz database, public URL, limits and
    the host asked for serve the same bytes."""
    empty_zoneinfo = tmp_path / "zoneinfo"
    empty_zoneinfo.mkdir()
    hosts = [
        ({"TZ": "UTC"}, "http://localhost"),
        (
            {
                "TZ": "Asia/Kathmandu",
                "PYTHONTZPATH": str(empty_zoneinfo),
                "AGENT_PLATFORM_SERVER_PUBLIC_URL": json.dumps("https://chat.example.org"),
                "AGENT_PLATFORM_LIMITS_MAX_BODY_BYTES": "2000",
            },
            "https://api.example.net:8443",
        ),
    ]
    documents = []
    for number, (environ, base_url) in enumerate(hosts):
        database = str(tmp_path / f"{number}.db")
        printed = subprocess.run(
            [sys.executable, "-c", PRINT_DOCUMENT, database, base_url],
            cwd=ROOT,
            env={**_environ(), **environ},
            capture_output=True,
            check=True,
        )
        documents.append(printed.stdout)
    assert json.loads(documents[0])["info"]["title"] == "Agent Platform API"
    assert documents[0] == documents[1]


def _environ():
    return {key: value for key, value in os.environ.items() if not key.startswith("AGENT_")}
