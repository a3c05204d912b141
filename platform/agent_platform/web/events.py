"""GET /app/events: the inbox's push stream (services/inbox_live.py) for
the signed-in person's workspace, or one of its conversations
(`?conversation=<id>`), as server-sent events that inbox.js listens to."""

import json

from flask import current_app, request

from ..api.sse import event_stream
from ..db import end_request
from ..services import inbox_live
from . import session
from .blueprint import blp

# How long a browser waits before reconnecting a stream that ended (ms).
RETRY_MS = 2000


@blp.route("/events")
@session.signed_in
def events():
    config, user = current_app.config, session.current_user()
    workspace_id, user_id = user.workspace_id, user.id
    wanted = request.args.get("conversation") or None
    followed = inbox_live.conversation_filter(workspace_id, wanted)
    slot = inbox_live.open_slot(user_id, config)
    end_request()  # the session's lookup is done: no connection held while streaming
    changes = inbox_live.follow(
        workspace_id,
        followed,
        config["INBOX_STREAM_HEARTBEAT_SECONDS"],
        config["INBOX_STREAM_MAX_SECONDS"],
    )
    return event_stream(_stream(changes), slot.release, cache_control="no-store")


def _stream(changes):
    """The reconnect delay first (it opens the stream at once), then each
    batch of changes as a `change` event, and a comment as heartbeat."""
    yield f"retry: {RETRY_MS}\n\n"
    for batch in changes:
        if batch is None:
            yield ": heartbeat\n\n"
        else:
            yield f"event: change\ndata: {json.dumps(batch, separators=(',', ':'))}\n\n"
