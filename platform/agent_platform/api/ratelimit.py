"""The client address a rate limit counts against."""

from ..addresses import limited_as


def client_address(config, req):
    """The client's address as limits count it (addresses.limited_as: an
    IPv6 address's /64): the connection's, or behind server.proxy_hops
    proxies the entry the farthest trusted one appended to X-Forwarded-For
    (what comes before it, the client wrote itself)."""
    hops = config["SERVER_PROXY_HOPS"]
    forwarded = req.headers.get("X-Forwarded-For", "") if hops else ""
    entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
    return limited_as(entries[-hops] if hops and len(entries) >= hops else req.remote_addr or "")
