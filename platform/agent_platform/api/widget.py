"""The website widget, served: its script, its hosted page, and the visitor
API the script calls, with its push stream. Public (no API key: the page is
anyone's), so it is bounded instead: exact-origin CORS, a rate limit per
visitor token and one per client address, a bound on new visitors per
address, open streams per visitor, small bodies. It
is the widget's own protocol rather than part of the REST API for
integrators, so it is a plain Flask blueprint left out of the OpenAPI
document; docs/channels/website.md describes it."""

import hashlib
import json
from functools import partial
from typing import NamedTuple

from flask import Blueprint, Response, current_app, g, jsonify, request
from werkzeug.wrappers import Request

from ..bodies import has_body
from ..channels.website import assets, push, visitors
from ..db import end_request
from ..errors import PayloadTooLarge, RateLimited, ValidationError
from ..services import rate_limits
from .json_bodies import json_or_none, refuse_other_media
from .ratelimit import client_address
from .sse import event_stream

blp = Blueprint("widget", __name__, url_prefix="/widget")

# A visitor API body: a chat message and a few fields, never more.
MAX_BODY_BYTES = 16 * 1024
# How long a browser may reuse a preflight's answer (Chromium caps it at 2 h).
PREFLIGHT_MAX_AGE = "7200"
# The fields each visitor API body may hold (what widget.js sends): any
# other is refused by name, as the REST API refuses an unknown field, so a
# misspelt one is not silently dropped.
SESSION_FIELDS = ("visitor_token", "user_id", "user_hash")
MESSAGE_FIELDS = ("client_message_id", "text", "choice", "name", "email")
READ_FIELDS = ("message_id",)
# Last-Event-ID: the browser's EventSource sends it when it reconnects.
ALLOWED_HEADERS = "Content-Type, X-Visitor-Token, Last-Event-ID"
# A poll's answer says when to ask again (seconds); the widget's script may
# read it across origins only when the answer names it.
POLL_AFTER = "X-Poll-After"
PREFIX = "/widget/"
POLL_SUFFIX = "/api/messages"
# An EventSource cannot send headers: the stream takes the token in its URL,
# which our logs hide (logs.RedactTokens) and a proxy's may not (docs/channels/website.md).
STREAM_SUFFIX = "/api/events"
# How long a browser waits before reconnecting a stream that ended (ms).
STREAM_RETRY_MS = 2000
# Where the fast path leaves its rate-limit verdict for the route it falls
# back to (None: counted and allowed; else the RateLimited to raise), so a
# request is counted once. Only the server sets environ keys without HTTP_.
LIMITS_VERDICT = "agent_platform.widget_limits_verdict"


def public(view):
    """No API key: the request pipeline lets it through (api.pipeline)."""
    view._public = True
    return view


@blp.route("/<channel_id>")
@public
def page(channel_id):
    """The hosted chat page; only the allowed origins may frame it."""
    channel = g.widget_channel
    response = Response(assets.page(channel), mimetype="text/html")
    ancestors = " ".join(
        visitors.frame_ancestors(channel, current_app.config["WIDGET_ALLOW_LOCALHOST"])
    )
    response.headers["Content-Security-Policy"] = (
        f"frame-ancestors {ancestors}; default-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: https:; object-src 'none'; base-uri 'none'"
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@blp.route("/<channel_id>/widget.js")
@public
def script(channel_id):
    """The script a site embeds (the same for every channel; it reads its
    channel from its own URL)."""
    response = Response(assets.script(), mimetype="text/javascript")
    response.headers["Cache-Control"] = "public, max-age=300"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@blp.route("/<channel_id>/api/session", methods=["POST"])
@public
def session(channel_id):
    """Start or resume: the visitor's token and the widget's settings."""
    body = _body(SESSION_FIELDS)
    return _data(
        visitors.start(
            g.widget_channel, body.get("visitor_token"), body.get("user_id"), body.get("user_hash")
        )
    )


@blp.route("/<channel_id>/api/messages", methods=["POST"])
@public
def send(channel_id):
    """The visitor writes; the agent answers as on any channel."""
    max_chars = current_app.config["WIDGET_MESSAGE_MAX_CHARS"]
    if visitors.is_new(g.widget_channel, g.visitor):
        _limit_new_visitor(current_app, request)
    message = visitors.post_message(g.widget_channel, g.visitor, _body(MESSAGE_FIELDS), max_chars)
    return _data(message, 201)


@blp.route("/<channel_id>/api/messages", methods=["GET"])
@public
def poll(channel_id):
    """What changed since the last poll; 204 when nothing did."""
    args = request.args
    changed, poll_after = visitors.changes(
        g.widget_channel, g.visitor, args.get("since"), args.get("seen")
    )
    response = Response(status=204) if changed is None else _data(changed)
    response.headers[POLL_AFTER] = str(poll_after)
    return response


@blp.route("/<channel_id>/api/events")
@public
def events(channel_id):
    """The poll's answers pushed as server-sent events, as they happen."""
    config, args = current_app.config, request.args
    resumed = request.headers.get("Last-Event-ID")
    since, seen = push.cursor(resumed, args.get("since"), args.get("seen"))
    address = client_address(config, request)
    slot = push.open_slot(g.widget_channel, g.visitor, address, config)
    changes = push.follow(
        g.widget_channel,
        g.visitor,
        since,
        seen,
        config["WIDGET_STREAM_HEARTBEAT_SECONDS"],
        config["WIDGET_STREAM_MAX_SECONDS"],
    )
    return event_stream(_event_stream(changes), slot.release)


def _event_stream(changes):
    """Server-sent events: the reconnect delay first (it opens the stream at
    once), then each change as the poll's `data` with its cursor as id, and
    a comment as heartbeat."""
    yield f"retry: {STREAM_RETRY_MS}\n\n"
    for changed in changes:
        if changed is None:
            yield ": heartbeat\n\n"
        else:
            data = json.dumps(changed, separators=(",", ":"))
            yield f"id: {push.event_id(changed)}\ndata: {data}\n\n"


@blp.route("/<channel_id>/api/read", methods=["POST"])
@public
def read(channel_id):
    """The visitor has read up to a message."""
    message_id = _body(READ_FIELDS).get("message_id")
    return _data(visitors.mark_read(g.widget_channel, g.visitor, message_id))


@blp.before_request
def guard():
    """Channel, origin (answering preflights), limits and visitor, checked
    before any view; the channel is looked up once for all of them."""
    channel = visitors.website_channel((request.view_args or {}).get("channel_id"))
    g.widget_channel = channel
    if "/api/" not in request.path:
        return None
    app, req = current_app._get_current_object(), request._get_current_object()
    origin = req.headers.get("Origin")
    # Any origin's preflight is answered, and the refusal below carries CORS
    # too (allow_origin): the widget on a page not allowed reads why and
    # tells the page's console, instead of a bare CORS failure. The refusal
    # changes nothing.
    if req.method == "OPTIONS":
        return _preflight()
    _check_origin(app, req, channel, origin)
    token = req.headers.get("X-Visitor-Token")
    if token is None and req.path.endswith(STREAM_SUFFIX):
        token = req.args.get("token")
    _count(app, req, token)
    if (req.content_length or 0) > MAX_BODY_BYTES:
        raise PayloadTooLarge(MAX_BODY_BYTES)
    if not req.path.endswith("/session"):
        g.visitor = visitors.visitor(channel, token)
    return None


@blp.after_request
def allow_origin(response):
    """The CORS answer of the visitor API, errors included (the widget reads
    their code): an allowed origin's, a refused origin's refusal (see
    guard), and those of the checks before it (api.pipeline: a NUL in the
    text, a body too large)."""
    origin = request.headers.get("Origin") if "/api/" in request.path else None
    if origin:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Expose-Headers"] = POLL_AFTER
        response.headers["Vary"] = "Origin"
    return response


def _preflight():
    response = Response(status=204)
    response.headers["Access-Control-Allow-Methods"] = "GET, POST"
    response.headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
    response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
    return response


def _check_origin(app, req, channel, origin):
    own, local = _own_origins(app.config, req.host_url), app.config["WIDGET_ALLOW_LOCALHOST"]
    visitors.check_origin(channel, origin, own, local)


def _own_origins(config, host_url):
    """The service's own origins: the one asked for, and server.public_url's."""
    own = {visitors.own_origin(host_url)}
    if config.get("SERVER_PUBLIC_URL"):
        own.add(visitors.own_origin(config["SERVER_PUBLIC_URL"]))
    return own


def _count(app, req, token):
    """Count the request against the limits once: when the fast path
    (unchanged_poll) has counted it already, its verdict stands."""
    if LIMITS_VERDICT not in req.environ:
        _limit(app, client_address(app.config, req), token)
    elif req.environ[LIMITS_VERDICT] is not None:
        raise req.environ[LIMITS_VERDICT]


def _limit(app, address, token):
    per_address, per_visitor, _ = _limiters(app)
    visitor = None if token is None else _token_key(token)
    for limiter, key, who in ((per_address, address, "address"), (per_visitor, visitor, "visitor")):
        if key is None:
            continue
        decision = limiter.hit(key)
        if not decision.allowed:
            raise RateLimited(
                f"Too many widget requests from this {who}; retry in {decision.retry_after} "
                "seconds.",
                headers={"Retry-After": str(decision.retry_after)},
            )


def _token_key(token):
    """The per-visitor window's key: the token's digest. It is counted
    before it is checked, and a made-up token of kilobytes kept as itself
    held that much for a minute (41 MB for 4,800 of them)."""
    return hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _limit_new_visitor(app, req):
    """Anyone can make up visitor tokens (they are stored nowhere), and each
    one's first message makes a contact: new visitors are counted per
    client address, so a script cannot fill the contacts table."""
    decision = _limiters(app).new_visitors.hit(client_address(app.config, req))
    if not decision.allowed:
        raise RateLimited(
            f"Too many new visitors from this address; retry in {decision.retry_after} seconds.",
            headers={"Retry-After": str(decision.retry_after)},
        )


class _Limiters(NamedTuple):
    per_address: object  # requests per client address
    per_visitor: object  # requests per visitor token
    new_visitors: object  # first messages per client address


def _limiters(app):
    """The widget's limiters, one set per app."""
    limiters = app.extensions.get("widget_limiters")
    if limiters is None:
        config = app.config
        # Addresses and tokens are the client's to make up: the windows kept
        # are bounded in number too (the least recently seen forgotten).
        per_minute = partial(rate_limits.limiter, max_keys=rate_limits.ADDRESSES_COUNTED)
        limiters = app.extensions["widget_limiters"] = _Limiters(
            per_minute("widget.address", config["WIDGET_ADDRESS_REQUESTS_PER_MINUTE"], 60),
            per_minute("widget.visitor", config["WIDGET_VISITOR_REQUESTS_PER_MINUTE"], 60),
            per_minute("widget.new_visitors", config["WIDGET_ADDRESS_NEW_VISITORS_PER_MINUTE"], 60),
        )
    return limiters


def _body(fields):
    """The JSON object the page sent, of these `fields` only, read with the
    API's limits (nesting, text that is Unicode): a lone surrogate escape
    was a 500 here."""
    refuse_other_media(request, "application/json")
    body = json_or_none(request.get_data(cache=True))
    if not isinstance(body, dict):
        raise ValidationError("body", "send a JSON object")
    unknown = [field for field in body if field not in fields]
    if unknown:
        raise ValidationError(unknown[0], "Unknown field.")
    return body


def _data(value, status=200):
    response = jsonify({"data": value})
    response.status_code = status
    return response


def unchanged_poll(app, environ):
    """The headers of the 204 the poll route would answer (the widget has
    seen everything), found ahead of Flask by api.inbound's middleware with
    the guard's checks in the guard's order; None when the route must answer
    (not a poll with a tag, a body, any check failing, something changed).
    Most polls are this one, and through Flask's request machinery it cost
    nearly twice the CPU (about 0.5 ms against 0.3 ms here)."""
    path = environ.get("PATH_INFO", "")
    channel_id = path[len(PREFIX) : -len(POLL_SUFFIX)]
    if not path.endswith(POLL_SUFFIX) or not channel_id or "/" in channel_id:
        return None
    if has_body(environ):
        return None  # a GET with a body: the route's size check decides
    req = Request(environ, populate_request=False)  # Flask's own, should it answer
    if "seen" not in req.args:
        return None
    with app.app_context():
        try:
            return _unchanged(app, req, channel_id)
        except Exception:
            return None  # the route checks again, and renders the error
        finally:
            end_request()


def _unchanged(app, req, channel_id):
    channel = visitors.website_channel(channel_id)
    origin = req.headers.get("Origin")
    _check_origin(app, req, channel, origin)
    token = req.headers.get("X-Visitor-Token")
    try:
        _limit(app, client_address(app.config, req), token)
    except RateLimited as refused:
        req.environ[LIMITS_VERDICT] = refused
        raise
    req.environ[LIMITS_VERDICT] = None
    visitor = visitors.visitor(channel, token)
    args = req.args
    poll_after = visitors.unchanged(channel, visitor, args.get("since"), args["seen"])
    if poll_after is None:
        return None
    cors = [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Expose-Headers", POLL_AFTER),
        ("Vary", "Origin"),
    ]
    headers = [("Content-Type", "text/html; charset=utf-8"), (POLL_AFTER, str(poll_after))]
    return headers + (cors if origin else [])  # a 204 has no length
