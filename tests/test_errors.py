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
