"""The SSRF guard: what it refuses, and that it connects where it checked."""

import contextlib
import gzip
import ipaddress
import json
import pathlib
import socket
import ssl
import threading
import time

import pytest
import requests

from agent_platform import netguard
from agent_platform.netguard import UnsafeURL, check_url, safe_request
from conftest import assert_error
from conversations_helpers import make_agent
from webhooks_helpers import Receiver, Reply

PUBLIC_IP = "93.184.216.34"


def public_resolver(host, port):
    return [PUBLIC_IP]


def resolver_to(*answers):
    """A resolver answering `answers[i]` on call i (the last one after), counting calls."""

    def resolve(host, port):
        resolve.calls.append(host)
        return [answers[min(len(resolve.calls), len(answers)) - 1]]

    resolve.calls = []
    return resolve


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


REFUSED_LITERALS = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.8.9.10:8080/", "loopback"),
    ("http://10.1.2.3/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://192.168.1.20/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://100.127.255.254/", "carrier-grade NAT"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "reserved"),
    ("http://192.0.2.1/", "private"),
    ("http://[::1]/", "loopback"),
    ("http://[::]/", "unspecified"),
    ("http://[fc00::1]/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fec0::1]/", "site-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[::ffff:127.0.0.1]/", "IPv4-mapped"),
    ("http://[::ffff:7f00:1]/", "IPv4-mapped"),
    ("http://[::ffff:169.254.169.254]/", "IPv4-mapped"),
    ("http://[::ffff:8.8.8.8]/", "IPv4-mapped"),
    ("http://[::127.0.0.1]/", "embeds 127.0.0.1"),
    ("http://[64:ff9b::a9fe:a9fe]/", "embeds 169.254.169.254"),
    ("http://[2002:c0a8:0101::1]/", "is an address that embeds 192.168.1.1, a private address"),
    # Teredo: the client's address is the last 32 bits, inverted.
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "embeds 127.0.0.1, a loopback address"),
    ("http://[fe80::1%25eth0]/", "zone"),
    ("http://2130706433/", "canonical"),
    ("http://127.1/", "canonical"),
    ("http://0x7f000001/", "canonical"),
    ("http://0x7f.0.0.1/", "canonical"),
    ("http://0177.0.0.1/", "canonical"),
    ("http://017700000001/", "canonical"),
    ("http://127.0.0.01/", "canonical"),
    ("http://0/", "canonical"),
    ("http://3232235777/", "canonical"),  # 192.168.1.1
    ("http://134744072/", "canonical"),  # 8.8.8.8: ambiguous forms are refused whatever they are
]


@pytest.mark.parametrize("url, reason", REFUSED_LITERALS)
def test_unsafe_addresses_and_forms_are_refused(url, reason):
    resolve = resolver_to(PUBLIC_IP)
    with pytest.raises(UnsafeURL, match=reason):
        check_url(url, resolver=resolve)
    assert resolve.calls == []  # literals are never looked up


@pytest.mark.parametrize(
    "answer, reason",
    [
        ("127.0.0.1", "loopback"),
        ("10.0.0.7", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.3.4", "carrier-grade NAT"),
        ("::1", "loopback"),
        ("fd00::5", "private"),
        ("::ffff:10.0.0.1", "IPv4-mapped"),
    ],
)
def test_names_resolving_to_unsafe_addresses_are_refused(answer, reason):
    with pytest.raises(UnsafeURL, match=f"hooks.example.com resolves to .*{reason}"):
        check_url("https://hooks.example.com/in", resolver=resolver_to(answer))


def test_a_name_with_any_unsafe_address_is_refused():
    def resolve(host, port):
        return [PUBLIC_IP, "10.0.0.1"]

    with pytest.raises(UnsafeURL, match="10.0.0.1"):
        check_url("https://mixed.example.com/", resolver=resolve)


def test_module_resolver_is_used_by_default(monkeypatch):
    monkeypatch.setattr(netguard, "resolve", lambda host, port: ["127.0.0.1"])
    with pytest.raises(UnsafeURL, match="loopback"):
        check_url("http://localhost.example/")


def test_real_resolution_of_localhost_is_refused():
    # getaddrinfo answers localhost from /etc/hosts or the resolver library, no DNS.
    with pytest.raises(UnsafeURL, match="loopback"):
        check_url("http://localhost/")


def test_public_targets_are_accepted():
    assert check_url(f"http://{PUBLIC_IP}/x") == ("http", PUBLIC_IP, PUBLIC_IP, 80)
    target = check_url("https://Hooks.Example.com/in?a=1", resolver=public_resolver)
    assert target == ("https", "hooks.example.com", PUBLIC_IP, 443)
    assert check_url("http://[2606:4700::1111]:8080/").ip == "2606:4700::1111"
    assert check_url("http://bücher.example/", resolver=public_resolver).host == (
        "xn--bcher-kva.example"
    )


@pytest.mark.parametrize(
    "url, reason",
    [
        ("ftp://example.com/", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://example.com/", "only http and https"),
        ("http://user:pw@example.com/", "credentials"),
        ("http:///path", "no host"),
        ("http://exa mple.com/", "spaces"),
        ("http://example.com:99999/", "parsed"),
        ("example.com", "only http and https"),
    ],
)
def test_malformed_urls_are_refused(url, reason):
    with pytest.raises(UnsafeURL, match=reason):
        check_url(url, resolver=public_resolver)


def test_ports_are_limited():
    with pytest.raises(
        UnsafeURL, match=r"^port 22 is not allowed \(allowed: 80, 443, 8080, 8443\)$"
    ):
        check_url(f"http://{PUBLIC_IP}:22/", resolver=public_resolver)
    for port in netguard.DEFAULT_PORTS:
        assert check_url(f"http://{PUBLIC_IP}:{port}/").port == port
    with pytest.raises(UnsafeURL, match="port 8080"):
        check_url(f"http://{PUBLIC_IP}:8080/", allowed_ports=[443])
    assert check_url(f"http://{PUBLIC_IP}:2222/", allowed_ports=[]).port == 2222


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:0/", "https://hooks.example:0/", "http://h.test:00/"]
)
def test_port_0_is_refused_even_where_any_port_is_allowed(url):
    # No server listens on port 0: a request there is a probe or a mistake.
    for allowed_ports in (None, [], [0]):
        with pytest.raises(UnsafeURL, match="port 0 is not a port a server listens on"):
            check_url(
                url, allow_private=True, allowed_ports=allowed_ports, resolver=public_resolver
            )


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/webhooks", {"url": "http://127.0.0.1:0/hook", "events": ["*"]}),
        ("/v1/mcp-servers", {"name": "Tools", "url": "http://127.0.0.1:0/mcp"}),
        ("/v1/agents/{agent}/intentions",
         {"name": "Notify", "examples": ["call me"], "action": "webhook",
          "url": "http://127.0.0.1:0/hook"}),
    ],
)  # fmt: skip
def test_an_api_url_on_port_0_is_a_400_naming_the_url(make_caller, app, path, body):
    # With private targets and every port allowed, port 0 is still refused.
    app.config.update(
        WEBHOOKS_ALLOW_PRIVATE_TARGETS=True, WEBHOOKS_ALLOWED_PORTS=[], MCP_ALLOW_PRIVATE_URLS=True
    )
    caller = make_caller()
    path = path.format(agent=make_agent(caller))
    error = assert_error(caller.post(path, json=body), 400, "VALIDATION_ERROR", "url: ")
    assert error["message"].startswith("url: ") and "port 0" in error["message"]
    listed = caller.get(path).get_json()
    assert listed["data"] == []  # nothing was stored


def test_allow_private_lets_loopback_through():
    assert check_url("http://127.0.0.1:5000/", allow_private=True, allowed_ports=[5000]).ip == (
        "127.0.0.1"
    )
    with pytest.raises(UnsafeURL, match="port"):
        check_url("http://127.0.0.1:5000/", allow_private=True)
    with pytest.raises(UnsafeURL, match="canonical"):
        check_url("http://127.1:5000/", allow_private=True, allowed_ports=[])


def test_sends_the_request_with_headers_and_body(receiver):
    response = safe_request(
        "POST",
        receiver.url + "?q=1",
        allow_private=True,
        allowed_ports=[receiver.port],
        headers={"X-Thing": "1"},
        json={"a": 1},
    )
    assert response.status_code == 200 and response.content == b"ok"
    (got,) = receiver.requests
    assert (got.method, got.path) == ("POST", "/hook?q=1")
    assert json.loads(got.body) == {"a": 1}
    assert got.headers["X-Thing"] == "1"
    assert got.headers["Host"] == f"127.0.0.1:{receiver.port}"


def test_unsafe_url_never_reaches_the_network(receiver):
    with pytest.raises(UnsafeURL):
        safe_request("POST", receiver.url, allowed_ports=[receiver.port])
    assert receiver.requests == []


def _second_loopback_receiver(port):
    try:
        return Receiver(host="127.0.0.2", port=port)
    except OSError:
        pytest.skip("127.0.0.2 is not usable here")


def test_connects_to_the_checked_address_without_a_second_lookup(receiver):
    # DNS rebinding: the name answers 127.0.0.1 first, 127.0.0.2 to any later lookup.
    # Both run a server on the same port; only the checked address may be reached.
    rebound = _second_loopback_receiver(receiver.port)
    try:
        resolve = resolver_to("127.0.0.1", "127.0.0.2")
        url = f"http://hooks.rebind.test:{receiver.port}/hook"
        response = safe_request(
            "GET", url, allow_private=True, allowed_ports=[receiver.port], resolver=resolve
        )
        assert response.status_code == 200
        assert resolve.calls == ["hooks.rebind.test"]
        assert len(receiver.requests) == 1 and rebound.requests == []
        assert receiver.requests[0].headers["Host"] == f"hooks.rebind.test:{receiver.port}"
    finally:
        rebound.close()


def test_redirects_are_not_followed(receiver):
    inner = Receiver()
    try:
        receiver.reply(Reply(302, headers={"Location": inner.url}))
        response = safe_request("POST", receiver.url, allow_private=True, allowed_ports=[], json={})
        assert response.status_code == 302
        assert inner.requests == []
    finally:
        inner.close()


def test_a_public_name_that_redirects_to_loopback_gets_nowhere(receiver, monkeypatch):
    # The fake public name resolves to the test server (private targets allowed to
    # reach it at all); its redirect to a loopback service is answered as the 302
    # it is, and the loopback address would be refused on its own anyway.
    secret = Receiver()
    try:
        monkeypatch.setattr(netguard, "resolve", lambda host, port: ["127.0.0.1"])
        location = f"http://127.0.0.1:{secret.port}/admin"
        receiver.reply(Reply(301, headers={"Location": location}))
        url = f"http://public.example.test:{receiver.port}/hook"
        response = safe_request("GET", url, allow_private=True, allowed_ports=[])
        assert (response.status_code, response.headers["Location"]) == (301, location)
        assert secret.requests == []
        with pytest.raises(UnsafeURL, match="loopback"):
            check_url(location, allowed_ports=[])
    finally:
        secret.close()


def test_reads_at_most_max_bytes(receiver):
    receiver.reply(Reply(200, body=b"x" * 200_000), Reply(200, body=b"y" * 10))
    response = safe_request(
        "GET", receiver.url, allow_private=True, allowed_ports=[], max_bytes=1024
    )
    assert response.content == b"x" * 1024 and response.truncated is True
    response = safe_request(
        "GET", receiver.url, allow_private=True, allowed_ports=[], max_bytes=1024
    )
    assert response.content == b"y" * 10 and response.truncated is False


def test_a_body_arriving_byte_by_byte_is_cut_at_exactly_max_bytes(receiver):
    """The byte past the limit is read (so the cut is known), not kept."""
    receiver.reply(Reply(200, body=b"abcdefghijkl", drip=0.01))
    response = safe_request("GET", receiver.url, allow_private=True, allowed_ports=[], max_bytes=10)
    assert (response.content, response.truncated) == (b"abcdefghij", True)


def test_a_body_of_exactly_max_bytes_is_whole(receiver):
    receiver.reply(Reply(200, body=b"abcdefghij", drip=0.01))
    response = safe_request("GET", receiver.url, allow_private=True, allowed_ports=[], max_bytes=10)
    assert (response.content, response.truncated) == (b"abcdefghij", False)


def test_timeout_waiting_for_the_answer(receiver):
    receiver.reply(Reply(200, delay=1.5))
    with pytest.raises(requests.Timeout):
        safe_request("GET", receiver.url, allow_private=True, allowed_ports=[], timeout=0.3)


def test_timeout_bounds_a_slowly_dripping_body(receiver):
    receiver.reply(Reply(200, body=b"z" * 40, drip=0.05))
    with pytest.raises(requests.Timeout):
        safe_request("GET", receiver.url, allow_private=True, allowed_ports=[], timeout=0.4)


def test_connection_refused_is_a_connection_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(requests.ConnectionError):
        safe_request("GET", f"http://127.0.0.1:{port}/", allow_private=True, allowed_ports=[])


def test_https_connects_to_the_checked_address_with_the_name_for_sni_and_certificate():
    target = check_url("https://hooks.example.com/in", resolver=public_resolver)
    adapter = netguard._adapter_for(target)
    prepared = requests.Request("POST", "https://hooks.example.com/in").prepare()
    host, pool = adapter.build_connection_pool_key_attributes(prepared, True)
    assert (host["scheme"], host["host"], host["port"]) == ("https", PUBLIC_IP, 443)
    assert pool["server_hostname"] == pool["assert_hostname"] == "hooks.example.com"
    assert pool["cert_reqs"] == "CERT_REQUIRED"
    other = requests.Request("GET", "https://elsewhere.example.com/").prepare()
    with pytest.raises(UnsafeURL, match="not the checked URL"):
        adapter.build_connection_pool_key_attributes(other, True)


def test_a_mail_server_host_is_checked_like_a_urls_and_pinned_to_its_address():
    """check_host: the e-mail channel's IMAP and SMTP hosts (no URL)."""
    assert netguard.check_host("imap.example.com", 993, resolver=resolver_to("93.184.216.34")) == (
        "93.184.216.34"
    )
    with pytest.raises(UnsafeURL, match="a private address") as refused:
        netguard.check_host("imap.example.com", 993, resolver=resolver_to("10.0.0.5"))
    assert refused.value.guard == "private"
    assert netguard.check_host("mail.lan", 143, True, resolver_to("10.0.0.5")) == "10.0.0.5"
    with pytest.raises(UnsafeURL, match="not a canonical IPv4"):
        netguard.check_host("0x7f.1", 25, True)


@pytest.mark.parametrize(
    "address, reason",
    [
        ("::ffff:127.0.0.1", "an IPv4-mapped IPv6 address"),
        ("fe80::1%eth0", "an IPv6 address with a zone"),
        ("2002:c0a8:0101::1", "an address that embeds 192.168.1.1, a private address"),
        ("fec0::1", "a site-local address"),
        ("0.0.0.0", "the unspecified address"),
        ("::", "the unspecified address"),
        ("::1", "a loopback address"),
        ("169.254.169.254", "a link-local address"),
        ("ff02::1", "a multicast address"),
        ("100.64.0.1", "a carrier-grade NAT address"),
        ("240.0.0.1", "a reserved address"),
        ("10.0.0.1", "a private address"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_the_reason_is_said_in_full(address, reason):
    assert netguard.unsafe_reason(ipaddress.ip_address(address)) == reason


def test_the_module_resolver_answers_each_address_once():
    # An address literal resolves to itself with no lookup; one entry per
    # address, not one per socket type.
    assert netguard.resolve("192.0.2.1", 443) == ["192.0.2.1"]
    assert netguard.resolve("2001:db8::7", 80) == ["2001:db8::7"]


def test_the_resolver_is_asked_for_the_url_host_and_port():
    asked = []

    def resolve(host, port):
        asked.append((host, port))
        return [PUBLIC_IP]

    check_url("https://hooks.example.com:8443/in", resolver=resolve, allowed_ports=[])
    assert asked == [("hooks.example.com", 8443)]


@pytest.mark.parametrize(
    "answer, reason",
    [
        (OSError("Name or service not known"), "cannot be resolved (Name or service not known)"),
        (["not-an-address"], "resolves to something that is not an address"),
        ([], "resolves to no address"),
    ],
)
def test_a_name_that_resolves_to_nothing_usable_says_why(answer, reason):
    def resolve(host, port):
        if isinstance(answer, Exception):
            raise answer
        return answer

    with pytest.raises(UnsafeURL) as refused:
        check_url("https://hooks.example.com/in", resolver=resolve)
    assert str(refused.value) == f"hooks.example.com {reason}"


# --- what goes on the wire ------------------------------------------------------

DATA = pathlib.Path(__file__).parent / "data"


class RawServer:
    """A listening socket whose connections `serve(connection)` handles in a
    thread each; `accepted` counts them."""

    def __init__(self, serve, family=socket.AF_INET, host="127.0.0.1", tls=None):
        self.listener = socket.socket(family)
        self.listener.bind((host, 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        self.serve, self.tls, self.accepted = serve, tls, 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.accepted += 1
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection):
        with contextlib.suppress(OSError):
            if self.tls is not None:
                connection = self.tls.wrap_socket(connection, server_side=True)
            with connection:
                self.serve(connection)

    def close(self):
        self.listener.close()


def answer_ok(connection):
    """Read one request's head; answer 200 with the head echoed as the body."""
    head = b""
    while b"\r\n\r\n" not in head:
        head += connection.recv(4096) or b"\r\n\r\n"
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(head), head))


def test_every_request_says_who_it_is_and_asks_for_no_compression(receiver):
    url = f"http://public.example.test:{receiver.port}/hook"
    resolver = resolver_to("127.0.0.1")
    safe_request("GET", url, allow_private=True, allowed_ports=[], resolver=resolver)
    got = receiver.requests[0].headers
    assert got["User-Agent"] == netguard.USER_AGENT
    assert (got["Accept"], got["Accept-Encoding"]) == ("*/*", "identity")
    assert got["Host"] == f"public.example.test:{receiver.port}"


def test_an_ipv6_literal_is_bracketed_in_the_host_header():
    server = RawServer(answer_ok, socket.AF_INET6, "::1")
    try:
        url = f"http://[::1]:{server.port}/hook"
        response = safe_request("GET", url, allow_private=True, allowed_ports=[])
        assert f"\r\nHost: [::1]:{server.port}\r\n" in response.text
    finally:
        server.close()


def test_a_host_name_ending_in_a_dot_is_the_same_host(receiver, monkeypatch):
    monkeypatch.setattr(netguard, "resolve", lambda host, port: ["127.0.0.1"])
    url = f"http://public.example.test.:{receiver.port}/hook"
    response = safe_request("GET", url, allow_private=True, allowed_ports=[])
    assert response.status_code == 200 and len(receiver.requests) == 1


def test_a_compressed_answer_is_decompressed(receiver):
    receiver.reply(Reply(200, headers={"Content-Encoding": "gzip"}, body=gzip.compress(b"hi" * 50)))
    response = safe_request("GET", receiver.url, allow_private=True, allowed_ports=[])
    assert response.content == b"hi" * 50


def test_an_endless_body_is_cut_at_max_bytes_without_waiting_for_its_end():
    def endless(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        for _ in range(2000):  # 10 s of a body that goes on
            connection.sendall(b"x" * 512)
            time.sleep(0.005)

    server = RawServer(endless)
    try:
        started = time.monotonic()
        response = safe_request(
            "GET",
            f"http://127.0.0.1:{server.port}/",
            allow_private=True,
            allowed_ports=[],
            timeout=3,
            max_bytes=4096,
        )
        assert (response.content, response.truncated) == (b"x" * 4096, True)
        assert time.monotonic() - started < 2.5  # read as it came, not to the end
    finally:
        server.close()


def test_a_dropped_connection_is_not_retried():
    server = RawServer(lambda connection: connection.recv(4096))  # reads, then hangs up
    try:
        with pytest.raises(requests.ConnectionError):
            url = f"http://127.0.0.1:{server.port}/"
            safe_request("GET", url, allow_private=True, allowed_ports=[], timeout=2)
        assert server.accepted == 1
    finally:
        server.close()


def test_keep_alive_connections_are_reused_for_one_target(receiver):
    for _ in range(3):
        safe_request("POST", receiver.url, allow_private=True, allowed_ports=[], json={})
    assert len({seen.peer for seen in receiver.requests}) == 1


def test_https_verifies_the_certificate():
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(DATA / "selfsigned-cert.pem", DATA / "selfsigned-key.pem")
    server = RawServer(answer_ok, tls=tls)
    try:
        url = f"https://127.0.0.1:{server.port}/"
        with pytest.raises(requests.exceptions.SSLError):
            safe_request("GET", url, allow_private=True, allowed_ports=[], timeout=2)
    finally:
        server.close()


# --- what a refusal says ----------------------------------------------------------


@pytest.mark.parametrize(
    "url, says",
    [
        ("ftp://example.com/", "only http and https URLs are allowed"),
        ("http://user:pw@example.com/", "credentials in the URL are not allowed"),
        ("http:///path", "the URL has no host"),
        ("http://exa mple.com/", "the URL must be text without spaces or control characters"),
        ("http://example.com:0/", "port 0 is not a port a server listens on"),
        ("http://[fe80::1%25eth0]/", "IPv6 zone identifiers are not allowed"),
        (
            "http://127.1/",
            "127.1 is not a canonical IPv4 address (decimal, octal, hex and short forms "
            "are refused; write four decimal numbers)",
        ),
        (
            "http://-ü.example/",
            "-ü.example is not a valid host name (Label must not start or end with a hyphen)",
        ),
    ],
)
def test_a_refusal_says_what_is_wrong_in_full(url, says):
    with pytest.raises(UnsafeURL) as refused:
        check_url(url, resolver=public_resolver)
    assert str(refused.value) == says


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://example.com/a!b", "example.com"),  # "!" is the first printable character
        ("http://example.com./", "example.com"),  # the root's dot is the same name
        ("http://ｅｘａｍｐｌｅ.com/", "example.com"),  # full-width letters, mapped by UTS 46
    ],
)
def test_names_are_read_as_a_resolver_would(url, host):
    assert check_url(url, resolver=public_resolver).host == host


def test_a_mail_server_name_ending_in_a_dot_is_the_same_host():
    resolve = resolver_to(PUBLIC_IP)
    assert netguard.check_host("mail.example.com.", 587, resolver=resolve) == PUBLIC_IP
    assert resolve.calls == ["mail.example.com"]
