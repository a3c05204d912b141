"""The client address a rate limit counts against."""


def client_address(config, req):
    """The client's address: the connection's, or behind server.proxy_hops
    proxies the entry the farthest trusted one appended to X-Forwarded-For
    (what comes before it, the client wrote itself)."""
    hops = config["SERVER_PROXY_HOPS"]
    forwarded = req.headers.get("X-Forwarded-For", "") if hops else ""
    entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
    return entries[-hops] if hops and len(entries) >= hops else req.remote_addr or ""
