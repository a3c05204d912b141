"""A server-sent event stream as a Flask response: the widget's and the inbox's."""

from flask import Response, stream_with_context


def event_stream(events, on_close, cache_control="no-cache"):
    """Stream `events` (text) in the request's context; `on_close` runs when
    the stream ends, however it ends (the client gone, the server stopping)."""
    response = Response(stream_with_context(events), mimetype="text/event-stream")
    response.call_on_close(on_close)
    response.headers["Cache-Control"] = cache_control
    response.headers["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return response
