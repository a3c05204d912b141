"""Live changes: "a message was stored or changed state", told at once to
whoever in this process waits for it (the widget's push stream, the inbox).

The publish point is the events outbox. Every new message, status move
(sent, delivered, read, failed), hand-off and conversation change emits its
event in the transaction that stores it (`emit`), so an event row exists
exactly when its change is committed, whichever process made it: the API's,
a separate `worker`, another server on the same database. So the database
is the bus, and it costs no write of its own: a change table filled in the
same transactions would have cost a row per message change (and a job to
prune it) to say what the outbox says already.

In each process one watcher thread, started by the first subscription and
gone with the last, reads the events committed after its high-water mark (an
opaque value of Event.changes_after's, in commit order) every POLL_SECONDS, and
gives each to the subscriptions whose filter it matches. A change committed
in this process wakes the watcher at once (`flush`, run by events.flush when
the app context of the request or job that made it ends, after its commit), so
subscribers here hear of it within milliseconds, and of other processes'
changes within POLL_SECONDS.

A subscription queues at most QUEUE_LIMIT changes: one that falls further
behind gets them dropped and RESYNC instead, telling it to read its state
afresh, so a slow reader costs bounded memory.

When the process stops (SIGTERM), `close_all` ends every subscription at
once, and any made after it: a stream would otherwise hold the stop up to
its lifetime. Its subscriber has lost nothing (a widget's browser reconnects
to the next server where it left off).

Only threads, locks and events with timeouts: a gevent worker patches them
into greenlets. The hub is built on the first subscription rather than at
import, so its primitives are the patched ones there.
"""

import logging
import threading
from collections import defaultdict, deque
from dataclasses import dataclass

from ..db import database
from ..models import Event

log = logging.getLogger("agent_platform.live")

# How often the watcher reads what other processes committed.
POLL_SECONDS = 0.3
# Events one read takes at most (it reads again at once while they come full).
BATCH = 500
# Changes a subscription holds before it is told to resync instead.
QUEUE_LIMIT = 256
# What a subscription's `next` answers when its changes were dropped.
RESYNC = "resync"
# What it answers once the process is stopping (close_all): no more changes.
CLOSED = "closed"
FILTERS = ("workspace_id", "conversation_id", "contact_id", "channel_id")


@dataclass(frozen=True, slots=True)
class Change:
    """One event about a message or a conversation, by its ids."""

    mark: object  # where a reader that has seen it goes on from (Event.changes_after)
    workspace_id: str
    name: str
    conversation_id: str | None
    contact_id: str | None
    channel_id: str | None
    message_id: str | None


class Subscription:
    """Changes of one workspace, narrowed by conversation, contact (a website
    visitor is one) or channel, and by the subscriber's own test when it
    gives one; a context manager that unsubscribes."""

    def __init__(self, filters, limit, accepts=None):
        self.filters = tuple(filters.items())
        self.limit = limit
        self._accepts = accepts
        self._changes = deque()
        self._overflowed = False
        self._ended = False
        self._lock = threading.Lock()
        self._ready = threading.Event()

    def matches(self, change):
        return all(getattr(change, name) == value for name, value in self.filters)

    def wants(self, change):
        """The subscriber's own test, run by the watcher instead of waking the
        subscriber to run it; one that fails lets the change through, and the
        subscriber decides as it would have without a test."""
        if self._accepts is None:
            return True
        try:
            return self._accepts(change)
        except Exception:
            log.exception("a subscriber's test of a change failed; it is told of it")
            return True

    def offer(self, change):
        """Queue `change` (the watcher's thread); past the limit, drop them all."""
        with self._lock:
            if self._overflowed:
                return
            if len(self._changes) >= self.limit:
                self._changes.clear()
                self._overflowed = True
            else:
                self._changes.append(change)
        self._ready.set()

    def next(self, timeout):
        """The changes queued since the last call, waiting up to `timeout`
        seconds for one: a list (empty when none came), RESYNC, or CLOSED
        (for good, whatever was queued: its subscriber reads afresh anyway)."""
        self._ready.wait(timeout)
        with self._lock:
            if self._ended:
                return CLOSED
            self._ready.clear()
            changes, self._changes = list(self._changes), deque()
            overflowed, self._overflowed = self._overflowed, False
        return RESYNC if overflowed else changes

    def end(self):
        """Answer CLOSED from now on, at once to a `next` waiting."""
        with self._lock:
            self._ended = True
        self._ready.set()

    def close(self):
        _hub().unsubscribe(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def subscribe(workspace_id, conversation_id=None, contact_id=None, channel_id=None, accepts=None):
    """A Subscription to the workspace's changes from now on (everything
    committed after this returns reaches it), narrowed by the ids given,
    and to the changes for which `accepts(change)` is true when given (run
    on the watcher's thread, which may read the database). Call it inside
    an app context: it reads the newest event."""
    if not workspace_id:
        raise ValueError("a subscription is always to one workspace")
    given = {"workspace_id": workspace_id, "conversation_id": conversation_id}
    given.update(contact_id=contact_id, channel_id=channel_id)
    filters = {name: value for name, value in given.items() if value}
    subscription = Subscription(filters, QUEUE_LIMIT, accepts)
    _hub().subscribe(subscription, Event.newest_mark())
    return subscription


def published():
    """A change was written in this thread's transaction (events.emit)."""
    _pending.flag = True


def flush():
    """Wake the watcher if this thread wrote a change: call it after the
    commit (the app's teardown does, and a stream after its own writes)."""
    if getattr(_pending, "flag", False):
        _pending.flag = False
        if _the_hub is not None:
            _the_hub.wake()


def close_all():
    """End every subscription of this process, and those made after: it is
    stopping. Call it from a greenlet or thread, not a signal handler (it
    takes the locks a handler may have interrupted)."""
    _hub().close_all()


def watching():
    """Whether this process's watcher runs (it does while anyone subscribes)."""
    return _the_hub is not None and _the_hub.running()


class _Hub:
    """This process's subscriptions and their watcher thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._subscriptions = set()
        # Each subscription under its narrowest filter, (name, value): a
        # change looks up the few that may want it instead of asking all
        # (500 open widgets are 500 subscriptions of one workspace).
        self._by_filter = defaultdict(set)
        self._thread = None
        self._closed = False

    def subscribe(self, subscription, mark):
        with self._lock:
            if self._closed:
                subscription.end()
                return
            self._subscriptions.add(subscription)
            self._by_filter[subscription.filters[-1]].add(subscription)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, args=(mark,), name="live-watcher", daemon=True
                )
                self._thread.start()

    def unsubscribe(self, subscription):
        """Remove it; the last one out waits for the watcher to stop."""
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.discard(subscription)
                _forget(self._by_filter, subscription.filters[-1], subscription)
            thread = self._thread if not self._subscriptions else None
        if thread is not None and thread is not threading.current_thread():
            self._wake.set()
            thread.join(timeout=5)

    def close_all(self):
        with self._lock:
            self._closed = True
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            subscription.end()

    def wake(self):
        self._wake.set()

    def running(self):
        with self._lock:
            return self._thread is not None

    def _watch(self, mark):
        failing = False
        while True:
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()
            with self._lock:
                if not self._subscriptions:
                    self._thread = None
                    break
            try:
                mark = self._read(mark)
                failing = False
            except Exception:
                if not failing:  # once per incident, not every POLL_SECONDS
                    log.exception("reading changes failed; trying again")
                failing = True
        _release()

    def _read(self, mark):
        """Hand out every event after `mark`; the new mark. The subscribers
        are taken after the read: one that subscribed before a change was
        committed is there by then, whenever the read ran."""
        try:
            while True:
                rows = Event.changes_after(mark, BATCH)
                for row in rows:
                    self._fan_out(Change(*row))
                mark = rows[-1][0] if rows else mark
                if len(rows) < BATCH:
                    return mark
        finally:
            _release()

    def _fan_out(self, change):
        if change.conversation_id is None:
            return  # not about a message or a conversation
        with self._lock:
            candidates = [
                subscription
                for key in _keys(change)
                for subscription in self._by_filter.get(key, ())
                if subscription.matches(change)
            ]
        for subscription in candidates:  # tested out of the lock: a test may read
            if subscription.wants(change):
                subscription.offer(change)


def _keys(change):
    """The (filter, value) pairs a subscription that wants `change` is under."""
    return [(name, getattr(change, name)) for name in FILTERS if getattr(change, name)]


def _forget(index, key, subscription):
    index[key].discard(subscription)
    if not index[key]:
        del index[key]


def _release():
    """The watcher's pooled connection goes back between reads."""
    if not database.is_closed():
        database.close()


# Made at import, unlike the hub's: a flag (at worst shared by the greenlets
# of one thread, which costs a spare wake) and a lock held without waiting.
_pending = threading.local()
_the_hub = None
_hub_lock = threading.Lock()


def _hub():
    global _the_hub
    with _hub_lock:
        if _the_hub is None:
            _the_hub = _Hub()
        return _the_hub
