"""Outbound HTTP to user-given URLs without server-side request forgery (SSRF).

`check_url` parses the URL, resolves its host once and refuses it when any
address is not a public unicast one (loopback, private, link-local including
169.254.169.254, carrier-grade NAT, multicast, reserved, unspecified, IPv6
unique-local/site-local, IPv4-mapped and other IPv4-embedding IPv6 forms) or
when its port is not allowed. Hosts written as non-canonical IPv4 numbers
(`2130706433`, `127.1`, `0x7f.1`, `0177.0.0.1`) are always refused: parsers
disagree about them, which is exactly what SSRF payloads exploit.

`safe_request` then connects to the address that was checked - never a second
DNS lookup, so a name cannot resolve to a public address for the check and to
a private one for the connection - while sending the name as Host header and
TLS SNI (and verifying the certificate against the name). Redirects are never
followed, environment proxies are ignored, at most `max_bytes` of the body
are read, and `timeout` bounds the whole exchange.

Tests swap the module-level `resolve` (or pass `resolver=`), so a made-up name
can resolve to a test server on loopback without any DNS.
"""

import ipaddress
import re
import socket
import threading
import time
from collections import OrderedDict
from typing import NamedTuple
from urllib.parse import urlsplit

import idna
import requests
from requests.adapters import HTTPAdapter

# Ports used when the caller gives none (allowed_ports=None).
DEFAULT_PORTS = (80, 443, 8080, 8443)
SCHEMES = {"http": 80, "https": 443}
USER_AGENT = "agent-platform"
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# WHATWG URL: a host whose last label is a number is an IPv4 address.
_NUMERIC_LABEL = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")


class UnsafeURL(Exception):
    """The URL is refused; the message says why. `guard` names the check a
    setting can relax ("ports", "private"), None when none can."""

    def __init__(self, message, guard=None):
        super().__init__(message)
        self.guard = guard


class Target(NamedTuple):
    """Where a checked URL goes: connect to `ip`:`port`, speak as `host`."""

    scheme: str
    host: str
    ip: str
    port: int


def resolve(host, port):
    """Every address `host` resolves to (module level so tests can swap it)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [info[4][0] for info in infos]


def check_url(url, *, allow_private=False, allowed_ports=None, resolver=None):
    """The Target of `url`, or raise UnsafeURL saying why it is refused.

    allowed_ports: None means DEFAULT_PORTS; an empty collection means any port.
    """
    scheme, host, port = _split(url)
    if allowed_ports is None:
        allowed_ports = DEFAULT_PORTS
    if allowed_ports and port not in allowed_ports:
        allowed = _listed(allowed_ports)
        raise UnsafeURL(f"port {port} is not allowed (allowed: {allowed})", "ports")
    return Target(scheme, host, check_host(host, port, allow_private, resolver), port)


def check_host(host, port, allow_private=False, resolver=None):
    """The address to connect to for `host` (a name or an IP literal) and
    `port`, refused as a URL's host is; for protocols without URLs (the
    e-mail channel's IMAP and SMTP servers)."""
    host = _ascii_host(host.rstrip("."))
    literal = _ip_literal(host)
    addresses = [literal] if literal else _resolved(host, port, resolver or resolve)
    if not allow_private:
        for address in addresses:
            reason = unsafe_reason(address)
            if reason:
                where = f"{host} is" if literal else f"{host} resolves to {address},"
                raise UnsafeURL(f"{where} {reason}", "private")
    return str(addresses[0])


def refusal(error, private_setting, ports_setting=None):
    """The message of `error` with the setting that would allow the URL, if
    any: "port 9 is not allowed (...); to allow it, set webhooks.allowed_ports"."""
    setting = {"private": private_setting, "ports": ports_setting}.get(error.guard)
    if setting is None:
        return str(error)
    variable = "AGENT_PLATFORM_" + setting.replace(".", "_").upper()
    return f"{error}; to allow it, set {setting} in the configuration (or {variable})"


def unsafe_reason(address):
    """Why `address` (an ipaddress object) is not a public target, or None."""
    if address.version == 6:
        if address.ipv4_mapped:
            return "an IPv4-mapped IPv6 address"
        if address.scope_id:
            return "an IPv6 address with a zone"
        embedded = _embedded_ipv4(address)
        reason = unsafe_reason(embedded) if embedded is not None else None
        if reason:
            return f"an address that embeds {embedded}, {reason}"
        if address.is_site_local:
            return "a site-local address"
    for reason, hit in (
        ("the unspecified address", address.is_unspecified),
        ("a loopback address", address.is_loopback),
        ("a link-local address", address.is_link_local),
        ("a multicast address", address.is_multicast),
        ("a carrier-grade NAT address", address.version == 4 and address in _CGNAT),
        ("a reserved address", address.is_reserved),
        ("a private address", address.is_private),
        ("not a globally routable address", not address.is_global),
    ):
        if hit:
            return reason
    return None


def safe_request(
    method,
    url,
    *,
    allow_private=False,
    allowed_ports=None,
    timeout=10,
    max_bytes=None,
    headers=None,
    data=None,
    json=None,
    resolver=None,
):
    """Check `url`, then send one request to the checked address.

    Returns a requests.Response whose `.content` holds at most `max_bytes`
    (all of it when None); `.truncated` says whether the body was longer.
    A 3xx is returned as it is. Raises UnsafeURL, or requests' exceptions
    (requests.Timeout when `timeout` seconds pass, ConnectionError, ...).
    """
    target = check_url(
        url, allow_private=allow_private, allowed_ports=allowed_ports, resolver=resolver
    )
    deadline = time.monotonic() + timeout
    request = requests.Request(
        method.upper(), url, headers=_headers(target, headers), data=data, json=json
    )
    prepared = request.prepare()
    response = _adapter_for(target).send(
        prepared, stream=True, timeout=(timeout, timeout), verify=True
    )
    try:
        _read_body(response, max_bytes, deadline, timeout)
    finally:
        response.close()
    return response


def _split(url):
    if not isinstance(url, str) or any(ord(char) < 33 for char in url):
        raise UnsafeURL("the URL must be text without spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise UnsafeURL(f"the URL cannot be parsed ({error})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise UnsafeURL("only http and https URLs are allowed")
    if "@" in parts.netloc:
        raise UnsafeURL("credentials in the URL are not allowed")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UnsafeURL("the URL has no host")
    if port == 0:
        raise UnsafeURL("port 0 is not a port a server listens on")
    return scheme, _ascii_host(host), SCHEMES[scheme] if port is None else port


def _ascii_host(host):
    """The host as requests will send it (IDNA-encoded like requests does)."""
    if host.isascii():
        return host
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as error:
        raise UnsafeURL(f"{host} is not a valid host name ({error})") from None


def _ip_literal(host):
    """The address when `host` is an IP literal; refuse ambiguous numeric forms."""
    if "%" in host:
        raise UnsafeURL("IPv6 zone identifiers are not allowed")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_LABEL.match(host.split(".")[-1]):
        raise UnsafeURL(
            f"{host} is not a canonical IPv4 address (decimal, octal, hex and short "
            "forms are refused; write four decimal numbers)"
        )
    return None


def _resolved(host, port, resolver):
    try:
        found = resolver(host, port)
    except (OSError, UnicodeError) as error:
        raise UnsafeURL(f"{host} cannot be resolved ({error})") from None
    addresses = []
    for text in found:
        try:
            addresses.append(ipaddress.ip_address(str(text)))
        except ValueError:
            raise UnsafeURL(f"{host} resolves to something that is not an address") from None
    if not addresses:
        raise UnsafeURL(f"{host} resolves to no address")
    return addresses


def _embedded_ipv4(address):
    """The IPv4 address carried inside 6to4, Teredo, NAT64 or IPv4-compatible forms."""
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]
    for network in (_NAT64, _IPV4_COMPATIBLE):
        if address in network and not address.is_unspecified and not address.is_loopback:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _listed(ports):
    return ", ".join(str(port) for port in sorted(ports))


def _headers(target, extra):
    host = f"[{target.host}]" if ":" in target.host else target.host
    if target.port != SCHEMES[target.scheme]:
        host = f"{host}:{target.port}"
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": "identity"}
    headers.update(extra or {})
    headers["Host"] = host  # the name, while the socket goes to the checked address
    return headers


def _read_body(response, max_bytes, deadline, timeout):
    """Read as data arrives (read1), stopping past max_bytes or the deadline.

    Each read waits at most `timeout` (the socket timeout), so a body that
    stalls is cut off within about twice `timeout`; an answer that completes
    after the deadline is a timeout all the same.
    """
    chunks, size = [], 0
    while max_bytes is None or size <= max_bytes:
        if time.monotonic() > deadline:
            raise requests.Timeout(f"no complete answer within {timeout} seconds")
        chunk = response.raw.read1(16384, decode_content=True)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if time.monotonic() > deadline:
        raise requests.Timeout(f"no complete answer within {timeout} seconds")
    body = b"".join(chunks)
    response.truncated = max_bytes is not None and len(body) > max_bytes
    response._content = body[:max_bytes] if response.truncated else body
    response._content_consumed = True


class _PinnedAdapter(HTTPAdapter):
    """Connects to the checked address whatever the URL's host resolves to now."""

    def __init__(self, target):
        self.target = target
        super().__init__(pool_connections=1, pool_maxsize=16, max_retries=0)

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(
            request, verify, cert
        )
        if (host_params["host"] or "").rstrip(".") != self.target.host:
            raise UnsafeURL(f"{request.url} is not the checked URL")
        host_params.update(host=self.target.ip, port=self.target.port)
        if self.target.scheme == "https":
            pool_kwargs.update(server_hostname=self.target.host, assert_hostname=self.target.host)
        return host_params, pool_kwargs


# Adapters (connection pools) by target, so repeated requests to one receiver
# reuse its keep-alive connections; a target includes the checked address.
_ADAPTERS = OrderedDict()
_ADAPTERS_LOCK = threading.Lock()
_MAX_ADAPTERS = 64


def _adapter_for(target):
    with _ADAPTERS_LOCK:
        adapter = _ADAPTERS.pop(target, None) or _PinnedAdapter(target)
        _ADAPTERS[target] = adapter
        while len(_ADAPTERS) > _MAX_ADAPTERS:
            _ADAPTERS.popitem(last=False)[1].close()
        return adapter
