"""Callbacks of the messaging networks: no API key (the network signs its
requests), not rate limited per key but bounded per channel."""

import io
import json

import marshmallow as ma
from flask import Response, current_app, request
from flask.views import MethodView
from marshmallow import fields
from werkzeug.datastructures import EnvironHeaders

from ..channels import adapters
from ..channels.adapters import Callback
from ..channels.whatsapp import intake
from ..db import end_request
from ..services import rate_limits
from . import widget
from .blueprint import ApiBlueprint
from .pipeline import request_id_of

blp = ApiBlueprint(
    "inbound",
    __name__,
    url_prefix="/inbound",
    description="Callback URLs of the messaging networks (signed by the network, no API key).",
)

CHALLENGE_RESPONSE = {
    "description": "The hub.challenge value, as it was sent",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}
EVENTS_BODY = {
    "required": True,
    "description": "A WhatsApp Cloud API webhook payload, signed in X-Hub-Signature-256",
    "content": {"application/json": {"schema": {"type": "object"}}},
}


class SubscriptionQuery(ma.Schema):
    class Meta:
        unknown = ma.EXCLUDE

    mode = fields.String(data_key="hub.mode")
    verify_token = fields.String(data_key="hub.verify_token")
    challenge = fields.String(data_key="hub.challenge")


class ReceivedSchema(ma.Schema):
    messages = fields.Integer(metadata={"description": "New messages stored"})
    duplicates = fields.Integer(metadata={"description": "Messages already stored (redelivered)"})
    statuses = fields.Integer()
    reactions = fields.Integer()
    notices = fields.Integer(metadata={"description": "Entries written to the channel's log"})
    failed = fields.Integer(metadata={"description": "Items that could not be stored (logged)"})


def _bound(app):
    """The per-channel limiter's hit function (one limiter per app). The
    middleware passes its app itself: through the current_app proxy the
    lookup cost about 10 k instructions per POST."""
    channel_limiter = app.extensions.get("inbound_limiter")
    if channel_limiter is None:
        per_minute = app.config["INBOUND_MAX_REQUESTS_PER_MINUTE"]
        channel_limiter = app.extensions.setdefault(
            "inbound_limiter", rate_limits.limiter("inbound.channel", per_minute, 60)
        )
    return channel_limiter.hit


@blp.route("/whatsapp/<channel_id>")
class WhatsAppCallback(MethodView):
    @blp.public
    @blp.arguments(SubscriptionQuery, location="query")
    @blp.response(200)
    @blp.doc(responses={"200": CHALLENGE_RESPONSE})
    @blp.errors(403, 404)
    def get(self, query, channel_id):
        """WhatsApp subscription check: hub.challenge back when hub.verify_token matches"""
        challenge = intake.verify_subscription(
            channel_id, query.get("mode"), query.get("verify_token"), query.get("challenge")
        )
        return Response(challenge, mimetype="text/plain")

    @blp.public
    @blp.response(200, ReceivedSchema)
    @blp.doc(requestBody=EVENTS_BODY)
    @blp.errors(400, 401, 404, 413, 429, 503)
    def post(self, channel_id):
        """WhatsApp events (messages, statuses, notices), signed with the app secret"""
        signature, bound = request.headers.get("X-Hub-Signature-256"), _bound(current_app)
        counts = intake.receive(channel_id, request.get_data(), signature, bound=bound)
        # Rendered here: the hottest route skips the schema's generic dump.
        return Response(json.dumps({"data": counts}), mimetype="application/json")


CALLBACK_BODY = {
    "required": True,
    "description": "The network's callback payload (a Telegram Update, checked with the "
    "X-Telegram-Bot-Api-Secret-Token header)",
    "content": {"application/json": {"schema": {"type": "object"}}},
}


@blp.route("/<channel_type>/<channel_id>")
class ChannelCallback(MethodView):
    @blp.public
    @blp.response(200, ReceivedSchema)
    @blp.doc(requestBody=CALLBACK_BODY)
    @blp.errors(400, 401, 404, 413, 429, 503)
    def post(self, channel_type, channel_id):
        """A network's callback for a channel of another type (Telegram), checked by its adapter"""
        adapter = adapters.adapter_for(channel_type)
        callback = Callback(request.get_data(), request.headers)
        return adapter.receive(channel_id, callback, bound=_bound(current_app))


PREFIX = "/inbound/"


def install(app):
    """Serve stored network callbacks and unchanged widget polls ahead of
    Flask (see StoredCallbacks)."""
    app.wsgi_app = StoredCallbacks(app, app.wsgi_app)


class StoredCallbacks:
    """WSGI middleware for the hottest public routes, the networks' callbacks
    POST /inbound/<type>/<id> (WhatsApp, Telegram: any type with an adapter),
    and the website widget's unchanged poll, GET /widget/<id>/api/messages
    answered 204 (api.widget.unchanged_poll decides, as its route would).

    A network callback needs none of a request's usual machinery (no key,
    no scope, no arguments to parse): this answers it straight from the
    WSGI environ, in an app context, with what the Flask route would answer
    when it stores the POST (200, the counts, X-Request-ID). Everything
    else goes to Flask untouched: other routes and methods, bodies without
    a Content-Length or over the limit, and every POST the intake refuses
    (unknown channel, bad signature, over the bound, not JSON). It refuses
    them before writing anything, so Flask's view runs them again from the
    same bytes and renders the error as every route does; a COMMIT that
    failed stored nothing either and is retried there once.
    """

    def __init__(self, app, wsgi_app):
        self.app = app
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if environ["REQUEST_METHOD"] == "GET" and path.startswith(widget.PREFIX):
            return self._widget_poll(environ, start_response)
        if environ["REQUEST_METHOD"] != "POST" or not path.startswith(PREFIX):
            return self.wsgi_app(environ, start_response)
        channel_type, _, channel_id = path[len(PREFIX) :].partition("/")
        adapter, length = adapters.get_adapter(channel_type), environ.get("CONTENT_LENGTH", "")
        if adapter is None or not channel_id or "/" in channel_id or not _is_length(length):
            return self.wsgi_app(environ, start_response)
        if int(length) > self.app.config["LIMITS_MAX_BODY_BYTES"]:
            return self.wsgi_app(environ, start_response)
        body = environ["wsgi.input"].read(int(length))
        environ["wsgi.input"] = io.BytesIO(body)  # for Flask, should it answer after all
        callback = Callback(body, EnvironHeaders(environ))
        try:
            with self.app.app_context():
                try:
                    counts = adapter.receive(channel_id, callback, bound=_bound(self.app))
                finally:
                    end_request()
        except Exception:
            return self.wsgi_app(environ, start_response)
        answer = _answer(counts)
        request_id = request_id_of(environ)
        headers = [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(answer))),
            ("X-Request-ID", request_id),
        ]
        start_response("200 OK", headers)
        return [answer]

    def _widget_poll(self, environ, start_response):
        headers = widget.unchanged_poll(self.app, environ)
        if headers is None:
            return self.wsgi_app(environ, start_response)
        start_response("204 NO CONTENT", [*headers, ("X-Request-ID", request_id_of(environ))])
        return []


def _answer(counts):
    """json.dumps({"data": counts}).encode() (the route's answer), written out:
    the counts are a few names and integers, and json.dumps costs a
    noticeable part of the request."""
    items = ", ".join(f'"{name}": {count}' for name, count in counts.items())
    return f'{{"data": {{{items}}}}}'.encode()


def _is_length(value):
    """A Content-Length int() reads at once ("²" is a digit to isdigit, not
    to int; gunicorn refuses both, another WSGI server may not)."""
    return value.isascii() and value.isdigit() and len(value) <= 18
