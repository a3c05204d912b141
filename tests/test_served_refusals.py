"""What the served worker refuses before the app reads a request: what
gunicorn cannot parse, and bodies in codings the service does not decode.
Each answer is in the API's error format, and changes nothing."""

import gzip
import json
import socket

import pytest
import requests

from test_serving import read_all, serve


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the module: every test leaves it as it found it."""
    yield from serve(tmp_path_factory.mktemp("refusals"), {})


def answered(served, request):
    """(status, headers, error) of what the server answers `request` (bytes)."""
    with socket.create_connection(("127.0.0.1", served.port), 10) as sock:
        sock.sendall(request)
        received, _ = read_all(sock, 0)
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(body)
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message", "status"}
    status = int(status_line.split()[1])
    assert error["status"] == status
    return status, headers, error


def contacts(served):
    listed = requests.get(f"{served.base}/v1/contacts", headers={"X-API-Key": served.key})
    return listed.json()["pagination"]["total"]


def posted(served, headers, body):
    key = f"X-API-Key: {served.key}\r\nContent-Type: application/json\r\nConnection: close\r\n"
    head = f"POST /v1/contacts HTTP/1.1\r\nHost: x\r\n{key}{headers}\r\n"
    return head.encode("latin-1") + body


@pytest.mark.parametrize(
    ("request_bytes", "status", "code", "named"),
    [
        (
            b"POST /v1/contacts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
            "MALFORMED_REQUEST",
            "CONTENT-LENGTH",
        ),
        (
            b"GET /v1/" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            414,
            "REQUEST_LINE_TOO_LONG",
            "",
        ),
        (
            b"GET /v1/health HTTP/1.1\r\n"
            + b"".join(b"X-%d: y\r\n" % i for i in range(200))
            + b"\r\n",
            431,
            "HEADERS_TOO_LARGE",
            "",
        ),
        (
            b"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Api-Key: a\r\n b\r\n\r\n",
            400,
            "MALFORMED_REQUEST",
            "X-API-KEY",
        ),
    ],
    ids=["length-and-chunked", "long-line", "many-headers", "folded-header"],
)
def test_what_gunicorn_cannot_parse_is_answered_in_the_error_format(
    served, request_bytes, status, code, named
):
    before = contacts(served)
    answer = answered(served, request_bytes)
    assert answer[0] == status and answer[2]["code"] == code
    assert named in answer[2]["message"]
    assert answer[1]["Connection"] == "close"
    assert contacts(served) == before


def test_a_compressed_body_is_415_and_creates_nothing(served):
    before, body = contacts(served), gzip.compress(json.dumps({"name": "Zed"}).encode())
    request = posted(served, f"Content-Encoding: gzip\r\nContent-Length: {len(body)}\r\n", body)
    status, headers, error = answered(served, request)
    assert (status, error["code"]) == (415, "UNSUPPORTED_CONTENT_ENCODING")
    assert "Content-Encoding: gzip" in error["message"]
    assert headers["Accept-Encoding"] == "identity"
    assert contacts(served) == before


def test_a_transfer_coding_other_than_chunked_is_501_and_creates_nothing(served):
    before, chunk = contacts(served), gzip.compress(json.dumps({"name": "Zed"}).encode())
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunk), chunk)
    status, _, error = answered(
        served, posted(served, "Transfer-Encoding: gzip, chunked\r\n", body)
    )
    assert (status, error["code"]) == (501, "UNSUPPORTED_TRANSFER_ENCODING")
    assert "Transfer-Encoding: gzip" in error["message"]
    assert contacts(served) == before


def test_a_body_as_it_is_is_read_whatever_it_says_of_its_coding(served):
    api, before = {"X-API-Key": served.key}, contacts(served)
    made = requests.post(
        f"{served.base}/v1/contacts",
        json={"name": "Ann"},
        headers={**api, "Content-Encoding": "identity"},
    )
    assert made.status_code == 201, made.text
    chunked = requests.post(
        f"{served.base}/v1/contacts",
        data=iter([json.dumps({"name": "Bo"}).encode()]),  # sent chunked
        headers={**api, "Content-Type": "application/json"},
    )
    assert chunked.status_code == 201, chunked.text
    # A coding named on a request without a body refuses nothing.
    me = requests.get(f"{served.base}/v1/me", headers={**api, "Content-Encoding": "gzip"})
    assert me.status_code == 200
    assert contacts(served) == before + 2
