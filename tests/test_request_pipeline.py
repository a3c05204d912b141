"""What every request passes before its view (api/pipeline.py), at its edges:
the request id, a body of exactly the limit (by Content-Length or chunked,
read in small pieces), what needs no key, HEAD and OPTIONS, and how the key
may be presented."""

import io
import json
import re

import pytest

from conftest import assert_error

LIMIT = 1000


@pytest.fixture
def settings(tmp_path):
    return {"DATABASE_PATH": str(tmp_path / "test.db"), "LIMITS_MAX_BODY_BYTES": LIMIT}


def field_body(size):
    """A custom field's JSON of exactly `size` bytes (padded with spaces)."""
    body = json.dumps({"name": "Cor preferida", "field_type": "text"}).encode()
    return body[:-1] + b" " * (size - len(body)) + b"}"


class Trickle(io.BytesIO):
    """A request body that arrives ten bytes per read, as a socket may give it."""

    def read(self, size=-1):
        return super().read(10 if size is None or size < 0 else min(size, 10))


def chunked(caller, stream):
    return caller.post(
        "/v1/custom-fields",
        input_stream=stream,
        headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
        environ_overrides={"wsgi.input_terminated": True},
    )


def fields(caller):
    return [field["name"] for field in caller.get("/v1/custom-fields").get_json()["data"]]


def test_a_body_of_exactly_the_limit_is_taken(caller):
    body = field_body(LIMIT)
    response = caller.post("/v1/custom-fields", data=body, content_type="application/json")
    assert response.status_code == 201, response.get_json()
    assert fields(caller) == ["Cor preferida"]


def test_a_chunked_body_read_in_pieces_is_taken_whole(caller):
    response = chunked(caller, Trickle(field_body(LIMIT)))
    assert response.status_code == 201, response.get_json()
    assert fields(caller) == ["Cor preferida"]


@pytest.mark.parametrize("size", [LIMIT + 1, 3 * LIMIT])
def test_a_chunked_body_over_the_limit_in_pieces_is_413(caller, size):
    assert_error(chunked(caller, Trickle(field_body(size))), 413, "PAYLOAD_TOO_LARGE", "1000 bytes")
    assert fields(caller) == []


def test_a_chunked_body_over_the_limit_is_read_one_byte_past_it_and_no_further(caller):
    # A client may stream gigabytes without a Content-Length: the refusal must
    # not wait for (or hold) more of them than it takes to know.
    body = Trickle(field_body(3 * LIMIT))
    assert_error(chunked(caller, body), 413, "PAYLOAD_TOO_LARGE", "1000 bytes")
    assert body.tell() == LIMIT + 1


def test_a_new_request_id_is_32_hex_digits(client):
    ids = {client.get("/v1/health").headers["X-Request-ID"] for _ in range(24)}
    assert len(ids) == 24
    assert all(re.fullmatch(r"[0-9a-f]{32}", request_id) for request_id in ids)


@pytest.mark.parametrize("given", ["a", "A.b_c-9", "x" * 64])
def test_a_well_formed_request_id_is_kept(client, given):
    assert (
        client.get("/v1/health", headers={"X-Request-ID": given}).headers["X-Request-ID"] == given
    )


@pytest.mark.parametrize("given", ["x" * 65, "a/b", "á"])
def test_a_malformed_request_id_is_replaced(client, given):
    answered = client.get("/v1/health", headers={"X-Request-ID": given}).headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", answered)


@pytest.mark.parametrize("path", ["/openapi.json", "/docs"])
def test_the_api_document_needs_no_key(client, path):
    assert client.get(path).status_code == 200


def test_a_static_file_needs_no_key(client):
    assert client.get("/static/missing.css").status_code == 404
    assert client.get("/docs/assets/missing.css").status_code == 404


def test_a_preflight_needs_no_key(client):
    response = client.options("/v1/agents")
    assert response.status_code == 200
    assert {"GET", "POST"} <= set(response.headers["Allow"].split(", "))


def test_head_is_authorised_as_get(client, caller, make_caller):
    assert client.head("/v1/agents").status_code == 401
    assert caller.request("HEAD", "/v1/agents").status_code == 200
    limited = make_caller(scopes=["contacts:read"])
    assert limited.request("HEAD", "/v1/agents").status_code == 403


def test_a_bearer_key_may_have_any_case_and_spacing(client, caller):
    for header in (f"bearer {caller.key}", f"BEARER {caller.key}", f"Bearer   {caller.key} "):
        assert client.get("/v1/me", headers={"Authorization": header}).status_code == 200


def test_an_empty_x_api_key_falls_back_to_the_bearer_header(client, caller):
    headers = {"x-api-key": " ", "Authorization": f"Bearer {caller.key}"}
    assert client.get("/v1/me", headers=headers).status_code == 200


def test_a_missing_scope_is_named(make_caller):
    limited = make_caller(scopes=["contacts:read"])
    assert_error(limited.get("/v1/agents"), 403, "INSUFFICIENT_SCOPE", "agents:read")
    assert limited.get("/v1/me").status_code == 200  # any valid key


def test_an_operation_that_declares_no_scope_is_refused_to_every_key(app, caller):
    """Failing closed: a route added without its scope is no open door."""
    app.add_url_rule("/v1/forgotten", view_func=lambda: {"data": "secret"})
    error = assert_error(caller.get("/v1/forgotten"), 403, "INSUFFICIENT_SCOPE")
    assert error["message"] == "This operation declares no scope."


def test_options_is_answered_without_a_key_on_a_plain_function_route_too(app, client):
    """Flask answers OPTIONS itself (a CORS preflight carries no key), for a
    MethodView and for a route that is a plain function alike."""
    app.add_url_rule("/v1/plain", view_func=lambda: {"data": "secret"})
    response = client.options("/v1/plain")
    assert response.status_code == 200 and response.data == b""
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS"}
    assert client.options("/v1/agents").status_code == 200


def test_a_scope_needed_as_well_is_named(make_caller):
    """Converting a lead writes an opportunity: leads:write and pipeline:write."""
    leads_only = make_caller(scopes=["leads:write"])
    response = leads_only.post("/v1/leads/01900000-0000-7000-8000-000000000000/convert", json={})
    error = assert_error(response, 403, "INSUFFICIENT_SCOPE")
    assert error["message"] == "This API key lacks the scope pipeline:write."


def test_a_request_without_a_key_is_told_where_to_put_one(client):
    error = assert_error(client.get("/v1/agents"), 401, "MISSING_API_KEY")
    assert error["message"] == (
        "No API key: send it in the x-api-key header or as Authorization: Bearer <key>."
    )
