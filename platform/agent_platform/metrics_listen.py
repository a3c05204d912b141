"""The operator's Prometheus endpoint (setting metrics.listen): every
workspace's figures and the database's size, on an address of its own and
without a key, so it belongs on loopback or a private network only.

prometheus_client's own HTTP server, in a thread of the serving process:
in `serve`'s gevent worker the thread is a greenlet and its socket
cooperative, so a scrape waits on nothing but its few queries.
"""

from prometheus_client import start_http_server

from .config_rules import listen_address
from .db import end_request
from .services.metrics import Collector


class _EveryWorkspace:
    """A registry of one collector, handing its connection back after each scrape."""

    def collect(self):
        try:
            yield from Collector(None).collect()
        finally:
            end_request()


def start(config):
    """Listen on metrics.listen, if set; returns the server or None."""
    if not config["METRICS_LISTEN"]:
        return None
    host, port = listen_address(config["METRICS_LISTEN"])
    server, _ = start_http_server(port, host, registry=_EveryWorkspace())
    return server
