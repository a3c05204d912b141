"""Exact sliding-window rate limiting, in memory.

Each key keeps the timestamps of its requests inside the window (at most
`limit` of them), so the count is exact rather than an approximation over
fixed windows. Keys are kept in least-recently-used order and a key whose
newest request has left the window is dropped, so memory is bounded by the
keys active in the last window; with `max_keys`, also by that number (the
least recently used key is dropped to make room), for keys a caller can
make up, such as client addresses.
"""

import math
import threading
import time
from collections import OrderedDict, deque
from typing import NamedTuple

# How many client addresses the count of requests with a bad key keeps at
# once (their windows, of at most `limit` times each): past it the least
# recently seen address is forgotten, so made-up addresses cannot grow memory.
ADDRESSES_COUNTED = 10_000


class Decision(NamedTuple):  # made on every request: a tuple is the cheapest immutable record
    allowed: bool
    limit: int
    remaining: int
    reset_at: int  # Unix seconds when the oldest counted request leaves the window
    retry_after: int  # seconds to wait; 0 when allowed


class SlidingWindowLimiter:
    def __init__(self, limit, window_seconds, clock=time.time, max_keys=None):
        self.limit = limit
        self.window = window_seconds
        self.clock = clock
        self.max_keys = max_keys
        self._hits = OrderedDict()
        self._lock = threading.Lock()

    def hit(self, key):
        """Count one request for `key` if the window has room."""
        now = self.clock()
        with self._lock:
            self._evict_idle(now)
            hits = self._hits.get(key)
            if hits is None:
                if self.max_keys is not None and len(self._hits) >= self.max_keys:
                    self._hits.popitem(last=False)
                hits = self._hits[key] = deque()
            else:
                self._hits.move_to_end(key)
            while hits and hits[0] <= now - self.window:
                hits.popleft()
            allowed = len(hits) < self.limit
            if allowed:
                hits.append(now)
            oldest = hits[0]
            reset_at = math.ceil(oldest + self.window)
            retry_after = 0 if allowed else max(1, math.ceil(oldest + self.window - now))
            return Decision(allowed, self.limit, self.limit - len(hits), reset_at, retry_after)

    def _evict_idle(self, now):
        while self._hits:
            key, hits = next(iter(self._hits.items()))
            if hits and hits[-1] > now - self.window:
                break
            del self._hits[key]

    def __len__(self):
        return len(self._hits)


def client_address(config, req):
    """The client's address: the connection's, or behind server.proxy_hops
    proxies the entry the farthest trusted one appended to X-Forwarded-For
    (what comes before it, the client wrote itself)."""
    hops = config["SERVER_PROXY_HOPS"]
    forwarded = req.headers.get("X-Forwarded-For", "") if hops else ""
    entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
    return entries[-hops] if hops and len(entries) >= hops else req.remote_addr or ""
