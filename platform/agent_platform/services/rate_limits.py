"""Sliding-window rate limiting: in this process's memory (one process
serving a SQLite file), exact; or in the database (several processes on
PostgreSQL, which must all count every request), in slices of the window
(models/rate_limits.py): never more than the limit in any window either.

In memory, each key keeps the timestamps of its requests inside the window (at most
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

from .. import scheduler
from ..db import database, is_postgresql
from ..models.rate_limits import counted_hit, prune_windows

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
    counts_by_the_database = False

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
            return _counted(hits, self.limit, self.window, now)

    def _evict_idle(self, now):
        while self._hits:
            key, hits = next(iter(self._hits.items()))
            if hits and hits[-1] > now - self.window:
                break
            del self._hits[key]

    def __len__(self):
        return len(self._hits)


def _counted(hits, limit, window, now):
    """Count a request at `now` in `hits` (the window's times, oldest first,
    appended to) if there is room, and say what was decided."""
    allowed = len(hits) < limit
    if allowed:
        hits.append(now)
    return _decided(allowed, limit, len(hits), hits[0], window, now)


def _decided(allowed, limit, counted, oldest, window, now):
    """The Decision once `counted` hits, the oldest at `oldest`, are in the window."""
    reset_at = math.ceil(oldest + window)
    retry_after = 0 if allowed else max(1, math.ceil(oldest + window - now))
    return Decision(allowed, limit, limit - counted, reset_at, retry_after)


class SharedWindowLimiter:
    """The same window, counted in the database for every process
    (models/rate_limits.py). Rows of idle keys are pruned by a job, so a
    caller who makes up keys (addresses) fills nothing for longer than the
    window.

    `clock` None counts by the database's clock, the one every process and
    machine agrees on; a callable (Unix seconds) replaces it, as for the
    limiter in memory: tests drive both the same way."""

    def __init__(self, name, limit, window_seconds, clock=None):
        self.name, self.limit, self.window = name, limit, window_seconds
        self.clock = clock

    @property
    def counts_by_the_database(self):
        """Whether a hit may be counted inside another statement (the API
        key's lookup, ApiKey.counted_by_lookup_id), given `database_window`, and its
        outcome then `decided`: by the database's clock only."""
        return self.clock is None

    @property
    def database_window(self):
        """(limiter name, limit, seconds), as the database takes them."""
        return self.name, self.limit, self.window

    def hit(self, key):
        now = None if self.clock is None else self.clock()
        return self.decided(counted_hit(self.name, key, self.limit, self.window, now))

    def decided(self, hit):
        """The Decision on a hit as the database counted it: (allowed,
        counted, oldest, now)."""
        allowed, counted, oldest, now = hit
        return _decided(allowed, self.limit, counted, oldest, self.window, now)


def limiter(name, limit, window_seconds, max_keys=None):
    """The limiter `name` (unique among limiters): shared by the processes
    on PostgreSQL, in memory on SQLite, where one process serves."""
    if is_postgresql():
        return SharedWindowLimiter(name, limit, window_seconds)
    return SlidingWindowLimiter(limit, window_seconds, max_keys=max_keys)


@scheduler.job("RATE_LIMIT_WINDOW_SECONDS")
def prune_windows_job(now=None):
    """Forget the database's windows of keys idle for a whole window (none
    are kept on SQLite: its one process counts in memory)."""
    if not is_postgresql():
        return 0
    with database.atomic():
        return prune_windows()
