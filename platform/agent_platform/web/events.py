"""GET /app/events: the inbox's push stream (services/inbox_live.py) for
the signed-in person's workspace, or one of its conversations
(`?conversation=<id>`), as server-sent events that inbox.js listens to."""

import json

from flask import Response, current_app, request, stream_with_context

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
    slot = inbox_live.open_slot(user_id, config["INBOX_STREAMS_PER_USER"])
    end_request()  # the session's lookup is done: no connection held while streaming
    changes = inbox_live.follow(
        workspace_id,
        followed,
        config["INBOX_STREAM_HEARTBEAT_SECONDS"],
        config["INBOX_STREAM_MAX_SECONDS"],
    )
    response = Response(stream_with_context(_stream(changes)), mimetype="text/event-stream")
    response.call_on_close(slot.release)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return response


def _stream(changes):
    """The reconnect delay first (it opens the stream at once), then each
    batch of changes as a `change` event, and a comment as heartbeat."""
    yield f"retry: {RETRY_MS}\n\n"
    for batch in changes:
        if batch is None:
            yield ": heartbeat\n\n"
        else:
            yield f"event: change\ndata: {json.dumps(batch, separators=(',', ':'))}\n\n"
