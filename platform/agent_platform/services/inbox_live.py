"""The inbox's push stream: "something changed in this workspace (or this
conversation)", told to an open inbox page as it happens (events.live), so
it fetches the regions it shows afresh. It carries ids, never content: the
page reads everything through its own signed-in requests.

Like the widget's stream (channels/website/push.py), it holds no database
connection while it waits (a gevent server may hold many streams; the pool
has 64), sends a heartbeat after `heartbeat` quiet seconds (proxies keep it
open; a gone browser is found by the write failing), ends after `lifetime`
seconds (the browser reconnects, and its session is checked again), and at
once when the server stops (live.close_all). A person may hold a few open
at once (tabs); past the cap the page polls instead."""

import time

from ..db import database
from ..events import live, stream_slots
from ..events.stream_slots import Cap
from . import conversations


def open_slot(user_id, config):
    """Count a new stream of the user, or refuse it (429) past
    `inbox.streams_per_user`, or past the server's share for all streams
    (stream_slots)."""
    per_user = config["INBOX_STREAMS_PER_USER"]
    mine = Cap(
        ("inbox user", user_id),
        per_user,
        f"You have {per_user} live inbox pages open already; this one checks every "
        "few seconds instead.",
    )
    return stream_slots.open_slot(mine, stream_slots.all_streams(config))


def conversation_filter(workspace_id, conversation_id):
    """The id a stream of one conversation follows (another workspace's is
    CONVERSATION_NOT_FOUND), or None for the whole workspace."""
    if conversation_id is None:
        return None
    return conversations.get_conversation(workspace_id, conversation_id).id


def follow(workspace_id, conversation_id, heartbeat, lifetime, clock=time.monotonic):
    """Yield each batch of changes as [{"conversation", "event"}] ([] when
    they were too many to list: read everything again), None as a heartbeat
    after `heartbeat` quiet seconds, until `lifetime` seconds have passed or
    the server stops. Subscribes when first asked (inside the request's
    context), and unsubscribes when closed."""
    deadline = clock() + lifetime
    try:
        subscription = live.subscribe(workspace_id, conversation_id=conversation_id)
    finally:
        _release()
    with subscription:
        quiet_until = clock() + heartbeat
        while (now := clock()) < deadline:
            news = subscription.next(max(min(quiet_until, deadline) - now, 0))
            if news == live.CLOSED:
                return
            if news:
                quiet_until = clock() + heartbeat
                yield [] if news == live.RESYNC else _described(news)
            elif clock() >= quiet_until:
                quiet_until = clock() + heartbeat
                yield None


def _described(changes):
    return [{"conversation": change.conversation_id, "event": change.name} for change in changes]


def _release():
    """Back to the pool while the stream waits."""
    if not database.is_closed():
        database.close()
