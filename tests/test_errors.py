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
