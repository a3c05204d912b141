"""The visitor's push stream: what `visitors.changes` would answer a poll,
sent when it happens instead of when asked.

A stream subscribes to the visitor's changes (events.live), then answers
what changed since its cursor, then waits; each change of the visitor's
contact (of the channel, while the visitor has no contact yet) makes it
read `changes` again and send what is new. So a stream sends exactly what
the poll would, and a widget applies both the same way. The cursor is the
poll's (`since`, `tag`): each sent change carries it as its id, which the
browser's EventSource sends back as Last-Event-ID when it reconnects, so a
reconnect loses nothing and repeats little.

Between changes a stream holds no database connection (a gevent server may
hold thousands of streams; the pool has 64), and it writes a heartbeat
every `heartbeat` seconds without news (proxies keep it open; a dead client
is found by the write failing), and ends after `lifetime` seconds (the
browser reconnects with its Last-Event-ID), so no stream outlives a
configuration or a deployment by much. When the server stops, every stream
ends at once (events.live.close_all), and the browser reconnects to the
next one with its Last-Event-ID.
"""

import time
from datetime import datetime
from functools import lru_cache, partial

from ...db import database
from ...errors import ValidationError
from ...events import live, stream_slots
from ...events.stream_slots import Cap
from . import visitors

# The event a visitor's first message makes, which gives them a contact.
FIRST_MESSAGE = "conversation.created"


def cursor(last_event_id, since, seen):
    """(since, seen) to start from: the Last-Event-ID the browser sent on a
    reconnect, else the query's (what the widget last had), else none."""
    if last_event_id:
        seen, _, since = last_event_id.partition("/")
    since = since or None
    if since is not None:
        try:
            datetime.fromisoformat(since)
        except ValueError:
            raise ValidationError("since", "must be the `since` of a previous answer") from None
    return since, seen or None


def event_id(changed):
    """The cursor after `changed`, as the id of the event that sends it."""
    return f"{changed['tag']}/{changed['since'] or ''}"


def open_slot(channel, visitor, address, config):
    """Count a new stream of the visitor, or refuse it (429) past its caps:
    `widget.streams_per_visitor` (tabs of one visitor), and
    `widget.streams_per_address` (anyone can make up visitors), and the
    server's share for all streams (stream_slots). Past them a widget polls."""
    per_visitor = config["WIDGET_STREAMS_PER_VISITOR"]
    per_address = config["WIDGET_STREAMS_PER_ADDRESS"]
    return stream_slots.open_slot(
        Cap(
            ("visitor", channel.id, visitor.key),
            per_visitor,
            f"This visitor has {per_visitor} streams open already; poll instead.",
        ),
        Cap(
            ("address", address),
            per_address,
            f"This address has {per_address} widget streams open already; poll instead.",
        ),
        stream_slots.all_streams(config),
    )


def follow(channel, visitor, since, seen, heartbeat, lifetime, clock=time.monotonic):
    """Yield what changed for the visitor (a `changes` dict) as it happens,
    None as a heartbeat after `heartbeat` seconds without one, until
    `lifetime` seconds have passed."""
    deadline = clock() + lifetime
    cursor = [since, seen]
    with _Watch(channel, visitor) as watch:
        yield from _news(channel, visitor, cursor)
        quiet_until = clock() + heartbeat
        while (now := clock()) < deadline:
            news = watch.next(min(quiet_until, deadline) - now)
            if news == live.CLOSED:
                return
            if news and (yield from _news(channel, visitor, cursor)):
                quiet_until = clock() + heartbeat
            elif clock() >= quiet_until:
                quiet_until = clock() + heartbeat
                yield None


def _news(channel, visitor, cursor):
    """Yield what changed after `cursor` ([since, seen], moved on as it is
    sent), page after page while the pages come full: what follows a full
    page is read at once, not at the next change. Returns how many were sent."""
    sent = 0
    while (changed := _read(channel, visitor, *cursor)) is not None:
        moved = [changed["since"], changed["tag"]] != cursor
        cursor[:] = changed["since"], changed["tag"]
        sent += 1
        yield changed
        if len(changed["messages"]) < visitors.PAGE or not moved:
            break  # all of it sent; or a page that did not move the cursor on
    return sent


def _read(channel, visitor, since, seen):
    """`changes` (the poll's answer), its writes announced, the connection back."""
    try:
        return visitors.changes(channel, visitor, since, seen)[0]
    finally:
        live.flush()
        _release()


def _release():
    """Back to the pool while the stream waits."""
    if not database.is_closed():
        database.close()


class _Watch:
    """The visitor's subscription: to their contact's changes, or to the
    channel's until they have a contact (their first message makes it)."""

    def __init__(self, channel, visitor):
        self.channel, self.visitor = channel, visitor
        self.contact_id = visitors.contact_id(channel, visitor)
        self.subscription = self._subscribe()

    def _subscribe(self):
        workspace_id = self.channel.workspace_id
        if self.contact_id is not None:
            return live.subscribe(workspace_id, contact_id=self.contact_id)
        # Until their first message makes their contact, nothing else on the
        # channel is theirs: the watcher tests each change for them, instead
        # of waking every such stream to test it (each first message did).
        accepts = partial(_made_for, self.visitor)
        return live.subscribe(workspace_id, channel_id=self.channel.id, accepts=accepts)

    def next(self, timeout):
        """Whether anything of the visitor's may have changed within
        `timeout`, or live.CLOSED: the process is stopping."""
        got = self.subscription.next(max(timeout, 0))
        if got == live.CLOSED:
            return got
        if not got or self.contact_id is not None:
            return bool(got)
        try:
            return self._contact_made()
        finally:
            _release()

    def _contact_made(self):
        """Whether the visitor has a contact now, watched from then on
        instead of the channel. Only their first message's change (or a
        resync) reaches them here: the watcher tested it (_subscribe)."""
        self.contact_id = visitors.contact_id(self.channel, self.visitor)
        if self.contact_id is None:
            return False
        old, self.subscription = self.subscription, self._subscribe()
        old.close()
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.subscription.close()


def _made_for(visitor, change):
    """Whether `change` made a conversation for the visitor's contact."""
    if change.name != FIRST_MESSAGE or change.contact_id is None:
        return False
    return visitor.identity in _visitors_of(change)


@lru_cache(maxsize=256)
def _visitors_of(change):
    """The visitors that `change`'s contact is, read once however many
    streams it is tested for: the watcher (one thread) tests each first
    message on the channel for every stream whose visitor has no contact
    yet. (Each such stream reading its own contact made 500 widgets opening
    at once cost seconds of CPU.) A change is one committed event: what it
    says of its contact stays."""
    return visitors.visitor_identities(change.contact_id)
