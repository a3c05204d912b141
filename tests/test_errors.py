import io
import json
import logging

import pytest

from conftest import assert_error


def test_malformed_json_is_400(caller):
    response = caller.post(
        "/v1/custom-fields", data="{not json", headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, "VALIDATION_ERROR", "JSON")


def test_a_body_that_is_not_an_object_is_400(caller):
    response = caller.post("/v1/custom-fields", json=["a", "b"])
    assert_error(response, 400, "VALIDATION_ERROR", "body")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a_body_of_another_type_is_415_and_creates_nothing(caller, content_type):
    # The JSON a client sent with the wrong type (or none) was read as no
    # body at all: a contact with none of its fields was created.
    headers = {"Content-Type": content_type} if content_type else {}
    body = json.dumps({"name": "Zed"})
    response = caller.post("/v1/contacts", data=body, headers=headers)
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE", "application/json")
    assert f"Content-Type: {content_type or '(none)'}" in response.get_json()["error"]["message"]
    assert caller.get("/v1/contacts").get_json()["pagination"]["total"] == 0


def test_json_types_and_bodiless_requests_are_read_as_before(caller):
    vendor = caller.post(
        "/v1/contacts",
        data=json.dumps({"name": "Ann"}),
        headers={"Content-Type": "application/vnd.example+json; charset=utf-8"},
    )
    assert vendor.status_code == 201 and vendor.get_json()["data"]["name"] == "Ann"
    # No body, whatever the type: a POST whose fields are all optional.
    assert caller.post("/v1/contacts", headers={"Content-Type": "text/plain"}).status_code == 201


def test_an_operation_reading_json_or_a_form_refuses_other_types(caller):
    agent = caller.post("/v1/agents", json={"name": "A"}).get_json()["data"]
    path = f"/v1/agents/{agent['id']}/trainings"
    text = {"type": "text", "content": "Opening hours: 9 to 5."}
    response = caller.post(path, data=json.dumps(text), headers={"Content-Type": "text/csv"})
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE", "multipart/form-data")
    assert caller.get(path).get_json()["pagination"]["total"] == 0
    assert caller.post(path, data=text).status_code == 201  # a form, as before
    assert caller.post(path, json=text).status_code == 201


def test_bad_query_parameters_are_named(caller):
    assert_error(caller.get("/v1/custom-fields?limit=0"), 400, "VALIDATION_ERROR", "limit")
    assert_error(caller.get("/v1/custom-fields?colour=red"), 400, "VALIDATION_ERROR", "colour")


@pytest.fixture
def settings(tmp_path):
    return {"DATABASE_PATH": str(tmp_path / "test.db"), "LIMITS_MAX_BODY_BYTES": 1000}


def test_body_over_the_limit_by_content_length(caller):
    body = json.dumps({"name": "x" * 2000, "field_type": "text"})
    response = caller.post("/v1/custom-fields", data=body, content_type="application/json")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE", "1000 bytes")
    assert caller.get("/v1/custom-fields").get_json()["pagination"]["total"] == 0


def test_body_over_the_limit_while_reading_a_chunked_body(caller):
    body = json.dumps({"name": "x" * 2000, "field_type": "text"}).encode()
    response = caller.post(
        "/v1/custom-fields",
        input_stream=io.BytesIO(body),
        headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
        # What a WSGI server sets for a chunked body of unknown length.
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert caller.get("/v1/custom-fields").get_json()["pagination"]["total"] == 0


def test_body_size_is_checked_before_the_key(client):
    response = client.post("/v1/custom-fields", data="x" * 2000, content_type="application/json")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_unexpected_errors_are_500_without_internals(app, client, caller, caplog):
    def explode():
        raise RuntimeError("secret internals")

    explode._public = True
    app.add_url_rule("/v1/explode", view_func=explode)
    with caplog.at_level(logging.ERROR):
        response = client.get("/v1/explode", headers={"X-Request-ID": "req-123"})
    error = assert_error(response, 500, "INTERNAL_ERROR", "req-123")
    assert "secret" not in error["message"]
    assert response.headers["X-Request-ID"] == "req-123"
    assert any("req-123" in record.getMessage() for record in caplog.records)
    assert "secret internals" in caplog.text


def test_every_response_has_a_request_id(client, caller):
    first = client.get("/v1/health").headers["X-Request-ID"]
    second = caller.get("/v1/me").headers["X-Request-ID"]
    assert first and second and first != second
    # An unusable incoming id is replaced, not echoed.
    assert (
        client.get("/v1/health", headers={"X-Request-ID": "bad id!"}).headers["X-Request-ID"]
        != "bad id!"
    )


# --- integers and single values ---------------------------------------------------------
# An integer field took any value int() took, and so 1.5 as 1, "5" as 5 and
# 1e-400 as 0; a query parameter took Arabic-Indic, fullwidth and "1_0"
# digits; a repeated parameter its first value. Each is a 400 naming it.

NOT_INTEGERS = [b"1.5", b'"5"', b"1e-400", b"5.0", b"1e400", b"true", b"[5]", b'{"n": 5}']


def integer_body(body, field, value):
    """`body` as JSON bytes, with `field` written as the JSON text `value`."""
    return json.dumps({**body, field: "@"}).encode().replace(b'"@"', value)


def post_raw(caller, method, path, body):
    headers = caller.headers({"Content-Type": "application/json"})
    return caller.client.open(path, method=method, data=body, headers=headers)


@pytest.mark.parametrize("value", NOT_INTEGERS)
def test_a_body_integer_that_is_not_one_is_refused_and_nothing_is_created(caller, value):
    body = integer_body({"name": "n9", "field_type": "text"}, "display_order", value)
    response = post_raw(caller, "POST", "/v1/custom-fields", body)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["message"] == "display_order: Not a valid integer."
    assert caller.get("/v1/custom-fields").get_json()["pagination"]["total"] == 0


def test_a_body_integer_is_taken_as_written(caller):
    body = {"name": "n9", "field_type": "text", "display_order": 7}
    created = caller.post("/v1/custom-fields", json=body)
    assert created.status_code == 201 and created.get_json()["data"]["display_order"] == 7


@pytest.fixture
def agent_id(caller):
    return caller.post("/v1/agents", json={"name": "Ana"}).get_json()["data"]["id"]


CREATES = [
    ("idle-actions", {"name": "x", "action": "close"}, "minutes", b"30.7"),
    ("transfer-rules", {"name": "x", "match_type": "keywords", "keywords": ["a"],
                        "action": "handoff"}, "priority", b"1.5"),
]  # fmt: skip


@pytest.mark.parametrize("kind, body, field, value", CREATES)
def test_idle_minutes_and_rule_priorities_must_be_ints(caller, agent_id, kind, body, field, value):
    path = f"/v1/agents/{agent_id}/{kind}"
    for each in (value, b'"5"'):
        response = post_raw(caller, "POST", path, integer_body(body, field, each))
        assert_error(response, 400, "VALIDATION_ERROR", f"{field}: Not a valid integer.")
    assert caller.get(path).get_json()["pagination"]["total"] == 0


def test_a_nested_integer_is_held_to_ints_too(caller):
    body = {"name": "Chatty", "kind": "messages_received", "points": 5}
    response = caller.post("/v1/leads/scoring-rules", json={**body, "params": {"at_least": 2.5}})
    assert_error(response, 400, "VALIDATION_ERROR", "params.at_least: Not a valid integer.")
    assert caller.get("/v1/leads/scoring-rules").get_json()["pagination"]["total"] == 0


def test_a_pipeline_column_probability_must_be_an_int(caller):
    body = integer_body({"name": "New", "kind": "open"}, "probability", b"49.9")
    response = post_raw(caller, "POST", "/v1/pipeline/columns", body)
    assert_error(response, 400, "VALIDATION_ERROR", "probability: Not a valid integer.")
    assert caller.get("/v1/pipeline/columns").get_json()["pagination"]["total"] == 0


@pytest.mark.parametrize(
    "field, value", [("knowledge_max_results", b"3.99"), ("max_reply_length", b"999.5")]
)
def test_agent_settings_refuse_fractions_and_change_nothing(caller, agent_id, field, value):
    path = f"/v1/agents/{agent_id}/settings"
    before = caller.get(path).get_json()["data"]
    response = post_raw(caller, "PUT", path, integer_body({}, field, value))
    assert_error(response, 400, "VALIDATION_ERROR", f"{field}: Not a valid integer.")
    assert caller.get(path).get_json()["data"] == before


@pytest.mark.parametrize(
    "query, name",
    [
        ("page=%D9%A3", "page"),  # Arabic-Indic 3
        ("page=1_0", "page"),
        ("limit=%EF%BC%95", "limit"),  # fullwidth 5
        ("page=%201", "page"),
        ("page=%2B1", "page"),
        ("page=1%20", "page"),
        ("page=1.0", "page"),
        ("page=", "page"),
        ("page=" + "9" * 5000, "page"),
        ("per_page=0x10", "per_page"),
    ],
)
def test_a_query_integer_is_ascii_digits_only(caller, query, name):
    response = caller.get(f"/v1/agents?{query}")
    assert_error(response, 400, "VALIDATION_ERROR", f"{name}: Not a valid integer.")


def test_query_integers_in_ascii_digits_are_read(caller):
    body = caller.get("/v1/agents?page=01&limit=5").get_json()
    assert (body["pagination"]["page"], body["pagination"]["limit"]) == (1, 5)
    # A minus sign is read, for the range to refuse where negatives make no sense.
    assert_error(caller.get("/v1/agents?page=-1"), 400, "VALIDATION_ERROR", "page: Must be")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/agents?limit=5&limit=6",
        "/v1/agents?limit=5&limit=5",
        "/v1/agents?sort=name&sort=created_at",
        "/v1/interactions?tag=a&tag=b&limit=5&limit=6",
    ],
)
def test_a_repeated_single_valued_parameter_is_refused_naming_it(caller, path):
    name = "sort" if "sort=" in path else "limit"
    response = caller.get(path)
    assert_error(response, 400, "VALIDATION_ERROR", f"{name}: Give one value, not 2.")


def test_a_repeated_credits_from_is_refused(caller, agent_id):
    response = caller.get(f"/v1/agents/{agent_id}/credits?from=2025-01-01&from=2025-02-01")
    assert_error(response, 400, "VALIDATION_ERROR", "from: Give one value, not 2.")


def test_a_list_parameter_still_takes_every_value(caller):
    assert caller.get("/v1/interactions?tag=a&tag=b").status_code == 200
