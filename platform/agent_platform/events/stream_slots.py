"""The push streams open in this process, counted against their caps.

A stream holds its connection for minutes, and the server takes at most
`server.max_connections` at once. Each kind of stream caps what one holder
may open (a visitor's tabs, a person's inbox pages), the widget's streams
also what one client address may open (visitor tokens cost nothing to
make), and all streams together take at most STREAMS_SHARE of the
connections: past any cap a page polls instead, and API clients still find
a connection free.
"""

import threading
from typing import NamedTuple

from ..errors import RateLimited

STREAMS_SHARE = 0.75  # of server.max_connections
ALL = "all streams"
RETRY_AFTER = "60"  # seconds: a page that polls meanwhile may try its stream again

_open = {}  # cap key: streams open under it
_lock = threading.Lock()


class Cap(NamedTuple):
    key: object
    most: int
    refusal: str  # the 429's message when it is full


def all_streams(config):
    """The cap on streams of every kind the server holds open at once."""
    most = max(1, int(config["SERVER_MAX_CONNECTIONS"] * STREAMS_SHARE))
    return Cap(ALL, most, f"The server holds {most} push streams already; poll instead.")


class Slot:
    """One open stream, counted under its caps until released."""

    def __init__(self, keys):
        self._keys = keys
        self._released = False

    def release(self):
        with _lock:
            if not self._released:
                self._released = True
                for key in self._keys:
                    _forget_one(key)


def _forget_one(key):
    _open[key] -= 1
    if not _open[key]:
        del _open[key]


def open_slot(*caps):
    """Count a new stream under every cap, or refuse it (429, nothing
    counted) when one of them is full."""
    with _lock:
        for cap in caps:
            if _open.get(cap.key, 0) >= cap.most:
                retry = {"Retry-After": RETRY_AFTER}
                raise RateLimited(cap.refusal, code="TOO_MANY_STREAMS", headers=retry)
        for cap in caps:
            _open[cap.key] = _open.get(cap.key, 0) + 1
    return Slot([cap.key for cap in caps])
