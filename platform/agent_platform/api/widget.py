"""The website widget, served: its script, its hosted page, and the visitor
API the script calls. Public (no API key: the page is anyone's), so it is
bounded instead: exact-origin CORS, a rate limit per visitor token and one
per client address, small bodies. It is the widget's own protocol rather
than part of the REST API for integrators, so it is a plain Flask blueprint
left out of the OpenAPI document; docs/channels.md describes it."""

from flask import Blueprint, Response, current_app, g, jsonify, request

from ..channels.website import assets, visitors
from ..errors import PayloadTooLarge, RateLimited, ValidationError
from .ratelimit import SlidingWindowLimiter

blp = Blueprint("widget", __name__, url_prefix="/widget")

# A visitor API body: a chat message and a few fields, never more.
MAX_BODY_BYTES = 16 * 1024
# How long a browser may reuse a preflight's answer (Chromium caps it at 2 h).
PREFLIGHT_MAX_AGE = "7200"
ALLOWED_HEADERS = "Content-Type, X-Visitor-Token"


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
    ancestors = " ".join(["'self'", *channel.settings.get("allowed_origins", [])])
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
    body = _body()
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
    message = visitors.post_message(g.widget_channel, g.visitor, _body(), max_chars)
    return _data(message, 201)


@blp.route("/<channel_id>/api/messages", methods=["GET"])
@public
def poll(channel_id):
    """What changed since the last poll; 204 when nothing did."""
    args = request.args
    changed = visitors.changes(g.widget_channel, g.visitor, args.get("since"), args.get("seen"))
    return Response(status=204) if changed is None else _data(changed)


@blp.route("/<channel_id>/api/read", methods=["POST"])
@public
def read(channel_id):
    """The visitor has read up to a message."""
    return _data(visitors.mark_read(g.widget_channel, g.visitor, _body().get("message_id")))


@blp.before_request
def guard():
    """Channel, origin (answering preflights), limits and visitor, checked
    before any view; the channel is looked up once for all of them."""
    channel = visitors.website_channel((request.view_args or {}).get("channel_id"))
    g.widget_channel = channel
    if "/api/" not in request.path:
        return None
    origin = request.headers.get("Origin")
    own = {visitors.own_origin(request.host_url)}
    if current_app.config.get("SERVER_PUBLIC_URL"):
        own.add(visitors.own_origin(current_app.config["SERVER_PUBLIC_URL"]))
    visitors.check_origin(channel, origin, own)
    g.widget_origin = origin
    if request.method == "OPTIONS":
        return _preflight()
    token = request.headers.get("X-Visitor-Token")
    _limit(_client_address(), token)
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise PayloadTooLarge(MAX_BODY_BYTES)
    if not request.path.endswith("/session"):
        g.visitor = visitors.visitor(channel, token)
    return None


@blp.after_request
def allow_origin(response):
    """The CORS answer for an allowed origin, errors included (the widget
    reads their code)."""
    origin = g.get("widget_origin")
    if origin:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Vary"] = "Origin"
    return response


def _preflight():
    response = Response(status=204)
    response.headers["Access-Control-Allow-Methods"] = "GET, POST"
    response.headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
    response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
    return response


def _client_address():
    """The visitor's address: the connection's, or behind server.proxy_hops
    proxies the entry the farthest trusted one appended to X-Forwarded-For
    (what comes before it, the client wrote itself)."""
    hops = current_app.config["SERVER_PROXY_HOPS"]
    forwarded = request.headers.get("X-Forwarded-For", "") if hops else ""
    entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
    return entries[-hops] if hops and len(entries) >= hops else request.remote_addr or ""


def _limit(address, token):
    per_address, per_visitor = _limiters()
    for limiter, key, who in ((per_address, address, "address"), (per_visitor, token, "visitor")):
        if key is None:
            continue
        decision = limiter.hit(key)
        if not decision.allowed:
            raise RateLimited(
                f"Too many widget requests from this {who}; retry in {decision.retry_after} "
                "seconds.",
                headers={"Retry-After": str(decision.retry_after)},
            )


def _limiters():
    """(per client address, per visitor token), one pair per app."""
    app = current_app._get_current_object()
    pair = app.extensions.get("widget_limiters")
    if pair is None:
        config = app.config
        pair = app.extensions["widget_limiters"] = (
            SlidingWindowLimiter(config["WIDGET_ADDRESS_REQUESTS_PER_MINUTE"], 60),
            SlidingWindowLimiter(config["WIDGET_VISITOR_REQUESTS_PER_MINUTE"], 60),
        )
    return pair


def _body():
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ValidationError("body", "send a JSON object")
    return body


def _data(value, status=200):
    response = jsonify({"data": value})
    response.status_code = status
    return response
