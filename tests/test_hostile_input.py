"""Hostile input never answers 500: each case the fuzzer found, pinned down.

Every refusal is a 400 (or 415) in the shared error body naming the field,
parameter or body at fault, and changes nothing."""

import json
import re

import pytest

from agent_platform.api.pagination import MAX_PAGE
from agent_platform.models import Contact, Message
from agent_platform.safejson import MAX_DEPTH
from conftest import assert_error
from conversations_helpers import data, make_agent
from fuzz_seed import seed_workspace
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import messages_payload, post, text

HUGE = 2**62


@pytest.fixture
def settings(tmp_path, graph):
    # The seeded webhook and MCP server point at a closed loopback port.
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        "MCP_ALLOW_PRIVATE_URLS": True,
    }


def nested(depth, leaf='"x"'):
    return "[" * depth + leaf + "]" * depth


def post_json(caller, path, text):
    return caller.post(path, data=text, headers={"Content-Type": "application/json"})


def listing_paths(client, ids):
    """Every listing of the OpenAPI document (a GET taking `page`), ids filled in."""
    document = client.get("/openapi.json").get_json()
    for path, operations in document["paths"].items():
        parameters = operations.get("get", {}).get("parameters", [])
        if any(parameter["name"] == "page" for parameter in parameters):
            yield re.sub(r"\{(\w+)\}", lambda name: ids[name.group(1)], path)


# --- HEAD and OPTIONS ------------------------------------------------------------


def test_head_authenticates_and_answers_as_get_without_a_body(client, caller, make_caller):
    agent_id = make_agent(caller)
    for path in ("/v1/agents", f"/v1/agents/{agent_id}"):
        got, head = caller.get(path), caller.request("HEAD", path)
        assert (head.status_code, head.get_data()) == (got.status_code, b"")
        assert head.headers["Content-Type"] == "application/json"
    assert client.head("/v1/agents").status_code == 401
    assert make_caller(scopes=["contacts:read"]).request("HEAD", "/v1/agents").status_code == 403
    assert caller.request("HEAD", "/v1/agents/not-an-agent").status_code == 404


def test_options_needs_no_key_and_reveals_only_the_methods(client, caller):
    agent_id = make_agent(caller)
    response = client.options(f"/v1/agents/{agent_id}")
    assert response.status_code == 200
    assert set(response.headers["Allow"].split(", ")) == {
        "GET",
        "HEAD",
        "OPTIONS",
        "PATCH",
        "DELETE",
    }
    assert response.get_data() == b""


# --- pagination ranges -------------------------------------------------------------


@pytest.mark.parametrize("name, value", [("page", HUGE), ("page", MAX_PAGE + 1), ("limit", HUGE)])
def test_page_and_limit_beyond_their_range_are_400_on_every_listing(client, caller, name, value):
    paths = list(listing_paths(client, seed_workspace(client, caller.key)))
    assert len(paths) >= 14
    for path in paths:
        response = caller.get(path, query_string={name: value})
        assert_error(response, 400, "VALIDATION_ERROR", f"{name}: ")


def test_the_last_page_allowed_answers_an_empty_page(caller):
    body = caller.get("/v1/agents", query_string={"page": MAX_PAGE, "limit": 100}).get_json()
    assert body["data"] == [] and body["pagination"]["page"] == MAX_PAGE


# --- strings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, problem",
    [
        ('{"name": "\\ud800"}', "name: contains"),
        ('{"name": "a\\udfffb"}', "name: contains"),
        ('{"name": "Ana", "personality": "\\ud800\\ud800"}', "personality: contains"),
        ('{"name": "Ana", "examples": {"a": ["x", "\\ud800"]}}', "examples.a.1: contains"),
        ('{"name": "Ana", "\\udc00": 1}', "body: has a key with"),
    ],
)
def test_a_lone_surrogate_in_a_json_body_is_400_naming_the_field(caller, body, problem):
    response = post_json(caller, "/v1/agents", body)
    assert_error(response, 400, "VALIDATION_ERROR", f"{problem} a lone UTF-16 surrogate")
    assert data(caller.get("/v1/agents")) == []


def test_a_surrogate_pair_is_a_character_and_is_kept(caller):
    response = caller.post(
        "/v1/agents",
        data='{"name": "Ana \\ud83d\\ude00"}',
        headers={"Content-Type": "application/json"},
    )
    assert data(response, 201)["name"] == "Ana \U0001f600"


def test_surrogate_bytes_in_the_query_string_do_not_fail(caller):
    # A URL carries UTF-8 bytes; encoded surrogates are not UTF-8 and are replaced.
    response = caller.get("/v1/agents?q=%ED%A0%80")
    assert response.status_code == 200


# --- nesting depth -------------------------------------------------------------------


def test_json_nested_beyond_the_limit_is_400_before_it_is_parsed(caller):
    for depth in (MAX_DEPTH + 1, 100_000):
        body = '{"name": "Ana", "personality": ' + nested(depth) + "}"
        response = caller.post(
            "/v1/agents", data=body, headers={"Content-Type": "application/json"}
        )
        assert_error(response, 400, "VALIDATION_ERROR", f"body: nests deeper than {MAX_DEPTH}")
    assert data(caller.get("/v1/agents")) == []


def test_nesting_within_the_limit_reaches_the_schema(caller):
    body = '{"name": "Ana", "personality": ' + nested(MAX_DEPTH - 1) + "}"
    response = post_json(caller, "/v1/agents", body)
    assert_error(response, 400, "VALIDATION_ERROR", "personality: Not a valid string.")


def test_brackets_inside_strings_are_not_nesting(caller):
    name = "[" * 200 + "{" * 200
    response = caller.post("/v1/agents", json={"name": name[:200]})
    assert data(response, 201)["name"] == name[:200]


def test_the_whatsapp_intake_refuses_deep_json_and_stores_nothing(client, channel):
    payload = messages_payload(text())
    payload["entry"][0]["changes"][0]["value"]["extra"] = json.loads(nested(MAX_DEPTH))
    raw = json.dumps(payload).encode()
    assert_error(post(client, channel["id"], None, raw=raw), 400, "VALIDATION_ERROR", "body: nests")
    deep = nested(50_000).encode()
    assert_error(
        post(client, channel["id"], None, raw=deep), 400, "VALIDATION_ERROR", "body: nests"
    )
    lone = b'{"object": "\\ud800"}'
    assert_error(post(client, channel["id"], None, raw=lone), 400, "VALIDATION_ERROR", "object: ")
    assert Message.select().count() == 0 and Contact.select().count() == 0


# --- dates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, name",
    [
        ({"to": "9999-12-31"}, "to"),
        ({"from": "0001-01-01"}, "from"),
        ({"from": "1969-12-31"}, "from"),
    ],
)
def test_credits_outside_the_date_range_are_400_naming_the_parameter(caller, query, name):
    agent_id = make_agent(caller)
    response = caller.get(f"/v1/agents/{agent_id}/credits", query_string=query)
    assert_error(response, 400, "VALIDATION_ERROR", f"{name}: Must be a date from 1970-01-01")


def test_credits_at_the_edges_of_the_range_work(caller):
    agent_id = make_agent(caller)
    for query in ({"from": "9998-12-31"}, {"to": "1970-01-01"}, {"from": "9998-12-15"}):
        response = caller.get(f"/v1/agents/{agent_id}/credits", query_string=query)
        assert data(response)["total_credits"] == 0


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:59:59Z",
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",
        "9998-12-31T23:00:00-05:00",
    ],
)
def test_updated_since_outside_the_range_is_400(caller, value):
    response = caller.get("/v1/conversations", query_string={"updated_since": value})
    assert_error(response, 400, "VALIDATION_ERROR", "updated_since: Must be a date from")


def test_updated_since_within_the_range_works(caller):
    for value in ("1970-01-01T00:00:00Z", "9998-12-31T23:59:59Z"):
        response = caller.get("/v1/conversations", query_string={"updated_since": value})
        assert response.status_code == 200


def test_recovering_deliveries_since_year_one_is_400(client, caller):
    webhook_id = seed_workspace(client, caller.key)["webhook_id"]
    response = caller.post(
        f"/v1/webhooks/{webhook_id}/recover", query_string={"since": "0001-01-01T00:00:00Z"}
    )
    assert_error(response, 400, "VALIDATION_ERROR", "since: Must be a date from")


# --- bodies ----------------------------------------------------------------------------


def test_a_patch_without_a_body_is_400_and_changes_nothing(caller):
    agent_id = make_agent(caller)
    path = f"/v1/agents/{agent_id}"
    assert_error(caller.patch(path), 400, "VALIDATION_ERROR", "body: is required")
    empty_json = caller.patch(path, headers={"Content-Type": "application/json"})
    assert_error(empty_json, 400, "VALIDATION_ERROR", "body: is required")
    for body in ("[]", "null", '"x"', "1"):
        response = caller.patch(path, data=body, headers={"Content-Type": "application/json"})
        assert_error(response, 400, "VALIDATION_ERROR", "body: ")


def test_a_body_that_is_not_json_is_415(caller):
    agent_id = make_agent(caller)
    response = caller.patch(
        f"/v1/agents/{agent_id}", data='{"name": "B"}', headers={"Content-Type": "text/plain"}
    )
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE", "application/json")
    assert data(caller.get(f"/v1/agents/{agent_id}"))["name"] == "Ana"


def test_a_patch_keeps_the_required_fields_of_nested_objects(caller):
    contact = data(caller.post("/v1/contacts", json={"name": "Bia"}), 201)
    path = f"/v1/contacts/{contact['id']}"
    response = caller.patch(path, json={"identities": [{"external_id": "5511911112222"}]})
    assert_error(response, 400, "MISSING_REQUIRED_FIELD", "identities.0.type")
    assert data(caller.get(path))["identities"] == []


def test_an_operation_whose_body_is_optional_takes_none(client, caller):
    conversation_id = seed_workspace(client, caller.key)["conversation_id"]
    response = caller.post(f"/v1/chats/{conversation_id}/handoff")
    assert data(response)["status"] == "handoff"
    document = client.get("/openapi.json").get_json()
    operation = document["paths"]["/v1/chats/{conversation_id}/handoff"]["post"]
    assert operation["requestBody"]["required"] is False
