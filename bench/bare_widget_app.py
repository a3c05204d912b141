"""The baseline of bench/widget.py: the widget's routes and /v1/me, bare.

What a widget asks of the service, answered with nothing behind it: a
session gives a token; a message is kept in memory and answered 50 ms
later (after its POST is answered, as the service's reply job comes after
the commit); the push stream (server-sent events) tells the visitor's
stream of both as they come, with a heartbeat as the service's; a poll
answers what is new or 204; /v1/me answers a constant. The same
connections, streams and requests as the service's, for the share of the
server and Flask in its figures and memory.
"""

import itertools
import json
import secrets
import threading

from flask import Flask, Response, request, stream_with_context

app = Flask(__name__)
ANSWER_AFTER, HEARTBEAT, STREAM_MAX = 0.05, 15.0, 300.0
_ids = itertools.count(1)
visitors = {}  # token -> Visitor


class Visitor:
    def __init__(self):
        self.messages = []
        self.changed = threading.Condition()  # a greenlet's under the gevent worker

    def add(self, sender, text):
        message = {"id": f"m{next(_ids)}", "from": sender, "text": text}
        with self.changed:
            self.messages.append(message)
            self.changed.notify_all()
        return message


@app.get("/")
def up():
    return {"ok": True}


@app.get("/v1/me")
def me():
    return {"data": {"id": "bare", "workspace_id": "bare", "scopes": ["admin"]}}


@app.post("/widget/<channel_id>/api/session")
def session(channel_id):
    token = secrets.token_urlsafe(16)
    visitors[token] = Visitor()
    return {"data": {"visitor_token": token}}


@app.post("/widget/<channel_id>/api/messages")
def send(channel_id):
    visitor = visitors[request.headers["X-Visitor-Token"]]
    message = visitor.add("visitor", request.get_json()["text"])
    threading.Timer(ANSWER_AFTER, visitor.add, ("agent", "Delivery costs 5 euros.")).start()
    return {"data": message}, 201


@app.get("/widget/<channel_id>/api/messages")
def poll(channel_id):
    visitor = visitors[request.headers["X-Visitor-Token"]]
    since = int(request.args.get("since") or 0)
    if since >= len(visitor.messages):
        return Response(status=204)
    count = len(visitor.messages)
    data = {"messages": visitor.messages[since:], "since": str(count), "tag": str(count)}
    return {"data": data}


@app.get("/widget/<channel_id>/api/events")
def events(channel_id):
    visitor = visitors[request.args["token"]]
    sent = int(request.headers.get("Last-Event-ID") or len(visitor.messages))
    return Response(stream_with_context(_stream(visitor, sent)), mimetype="text/event-stream")


def _stream(visitor, sent):
    yield "retry: 3000\n\n"
    for _ in range(int(STREAM_MAX / HEARTBEAT)):
        with visitor.changed:
            if len(visitor.messages) <= sent:
                visitor.changed.wait(HEARTBEAT)
            new = visitor.messages[sent:]
        if not new:
            yield ": heartbeat\n\n"
            continue
        sent += len(new)
        yield f"id: {sent}\ndata: {json.dumps({'messages': new})}\n\n"
