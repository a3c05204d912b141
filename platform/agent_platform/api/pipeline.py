"""What every request passes before its view: request id, key, rate limit,
body size, path and method, scope, workspace. Views only ever see an
authorised caller."""

import io
import re
from random import getrandbits

from flask import current_app, g, request

from ..bodies import has_body
from ..errors import Forbidden, PayloadTooLarge, RateLimited, Unauthorized, ValidationError
from ..services import keys
from .blueprint import ANY_SCOPE
from .nul import refuse_nul
from .ratelimit import client_address

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# flask-smorest's docs blueprint and Flask's static files need no key; nor
# the inbox's pages, whose people sign in instead (web/session.py).
_PUBLIC_BLUEPRINTS = {"api-docs", "docs-assets", "web"}
# The networks' callbacks: a NUL in what a customer wrote is kept as U+FFFD
# (channels.neutral.storable); refusing would lose the message, or make the
# network send it again for days.
_NUL_REPLACED_BLUEPRINTS = {"inbound"}
WORKSPACE_VIEW_ARGS = ("workspace_id", "workspaceId")


def install(app):
    app.before_request(admit)
    app.after_request(add_headers)


def admit():
    """The checks, in this order: a key the request carries (401, then the
    rate limit's 429), the body's size (413), the path and method (404,
    405), then the scope (403), workspace and a NUL in the text (400). A
    public route (no key) has its text checked for NUL all the same. A
    key is checked first so that every answer to a request carrying one,
    those three errors included, counts against its limit and carries the
    rate-limit headers."""
    # One hook rather than three: Flask's cost is per hook and per request.
    # The request, g and current_app proxies look up the context on every
    # use (about ten thousand instructions each); the hook resolves them once.
    req, request_globals = request._get_current_object(), g._get_current_object()
    app = current_app._get_current_object()
    request_globals.request_id = request_id_of(req.environ)
    routed = req.routing_exception is None
    if routed:
        # HEAD is GET without the body: the same key, scope and status.
        method = "GET" if req.method == "HEAD" else req.method
        public, scopes, also_required = _access(app, req.endpoint, method)
    else:
        public = False  # an unknown path or method: counted, like any other request
    raw_key = None if public else _key_in(req.environ)
    if raw_key:
        api_key = _admit_key(req, request_globals, app, raw_key)
    check_body_size(req, app.config["LIMITS_MAX_BODY_BYTES"])
    if not routed:
        return  # Flask answers the 404 or 405 of a request it could not route
    if public:
        if req.blueprint not in _NUL_REPLACED_BLUEPRINTS:
            refuse_nul(req)  # the widget, pages, forms and sign-in, like the API
        return
    if not raw_key:
        raise Unauthorized(
            "No API key: send it in the x-api-key header or as Authorization: Bearer <key>.",
            code="MISSING_API_KEY",
        )
    _check_scope(api_key, scopes, also_required)
    _check_workspace(api_key, req.view_args or {})
    refuse_nul(req)


def request_id_of(environ):
    """The caller's X-Request-ID when well formed, else a new one."""
    incoming = environ.get("HTTP_X_REQUEST_ID", "")
    # 32 random hex digits. A request id only has to be unique, not secret:
    # no system call (os.urandom's) is spent on it.
    return incoming if _REQUEST_ID.match(incoming) else f"{getrandbits(128):032x}"


def check_body_size(req, limit):
    environ = req.environ
    if not has_body(environ):
        return  # most GETs
    _check_length_header(environ.get("CONTENT_LENGTH"))
    if req.content_length is None and environ.get("wsgi.input_terminated"):
        _buffer_body_of_unknown_length(limit)
    elif req.content_length is not None and req.content_length > limit:
        raise PayloadTooLarge(limit)


def _check_length_header(value):
    """gunicorn refuses a Content-Length that is not a number; another WSGI
    server may pass it on, and Werkzeug would then read the body as empty
    (also one of more digits than int() reads)."""
    if value and not (value.isascii() and value.isdigit()):
        raise ValidationError("Content-Length", "must be a number of bytes.")
    if value and len(value) > 18:  # past what int() reads at once; past any limit too
        raise PayloadTooLarge(current_app.config["LIMITS_MAX_BODY_BYTES"])


def _buffer_body_of_unknown_length(limit):
    """Read a chunked body up to the limit before anything parses it.

    Werkzeug would silently cut such a body at MAX_CONTENT_LENGTH, and a
    truncated JSON document must be refused as too large, not as malformed.
    """
    raw, chunks, size = request.environ["wsgi.input"], [], 0
    while size <= limit:
        chunk = raw.read(limit + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise PayloadTooLarge(limit)
    request.environ["wsgi.input"] = io.BytesIO(b"".join(chunks))


def view_method(endpoint=None, method=None):
    """The function that will handle the request (a MethodView's method)."""
    view = current_app.view_functions.get(endpoint or request.endpoint)
    view_class = getattr(view, "view_class", None)
    if view_class is None:
        return view
    return getattr(view_class, (method or request.method).lower(), None)


def is_public(endpoint, method):
    if endpoint is None or endpoint.split(".")[0] in _PUBLIC_BLUEPRINTS or endpoint == "static":
        return True
    if method == "OPTIONS":
        # Flask answers it itself with the Allow header and an empty body:
        # nothing of the workspace is read, and CORS preflights carry no key.
        return True
    handler = view_method(endpoint, method)
    return handler is None or getattr(handler, "_public", False)


def _access(app, endpoint, method):
    """(public, required scope) of an operation, looked up once per app."""
    known = app.extensions.setdefault("operation_access", {})
    if (endpoint, method) not in known:
        public = is_public(endpoint, method)
        handler = None if public else view_method(endpoint, method)
        scopes = getattr(handler, "_accepted_scopes", None)
        known[endpoint, method] = (public, scopes, getattr(handler, "_also_required_scopes", ()))
    return known[endpoint, method]


def _key_in(environ):
    """The key from x-api-key or Authorization: Bearer (never the query
    string), or "" when the request carries none."""
    key = environ.get("HTTP_X_API_KEY", "").strip()
    if not key:
        scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() == "bearer":
            key = token.strip()
    return key


def _admit_key(req, request_globals, app, raw_key):
    """The live key `raw_key` is, counted against its root's rate limit
    (429 past it). A key that is not one (unknown, malformed, revoked) is
    401, counted against the client's address for the headers alone: such
    an answer is never a 429, which would tell a client with a bad key to
    wait rather than to fix it."""
    try:
        api_key, decision = keys.authenticate_counted(raw_key, app.extensions["rate_limiter"])
    except Unauthorized:
        limiter = app.extensions["address_rate_limiter"]
        request_globals.rate_limit = limiter.hit(client_address(app.config, req))
        raise
    request_globals.api_key = api_key
    request_globals.workspace_id = api_key.workspace_id
    request_globals.rate_limit = decision  # for the headers, a 429's included
    if not decision.allowed:
        raise RateLimited(
            f"Rate limit of {decision.limit} requests per "
            f"{app.config['RATE_LIMIT_WINDOW_SECONDS']} seconds exceeded; "
            f"retry in {decision.retry_after} seconds.",
            headers={"Retry-After": str(decision.retry_after)},
        )
    return api_key


def _check_scope(api_key, scopes, also_required=()):
    """`scopes`: those of which the key needs any one (the spec's variants);
    `also_required`: those it needs as well, every one."""
    if scopes is None:
        # Every authenticated operation declares a scope (a test walks the
        # routes); failing closed keeps a forgotten declaration harmless.
        raise Forbidden("This operation declares no scope.", code="INSUFFICIENT_SCOPE")
    held = api_key.scopes
    if scopes[0] != ANY_SCOPE and not any(scope in held for scope in scopes):
        raise Forbidden(
            f"This API key lacks the scope {' or '.join(scopes)}.", code="INSUFFICIENT_SCOPE"
        )
    for scope in also_required:
        if scope not in held:
            raise Forbidden(f"This API key lacks the scope {scope}.", code="INSUFFICIENT_SCOPE")


def _check_workspace(api_key, view_args):
    for name in WORKSPACE_VIEW_ARGS:
        named = view_args.get(name)
        if named is not None and named != api_key.workspace_id:
            raise Forbidden(
                f"This API key has no access to workspace {named}.",
                code="WORKSPACE_ACCESS_DENIED",
            )


def add_headers(response):
    # Only this hook sets these headers, so they are added, not searched for and replaced.
    headers, request_globals = response.headers, g._get_current_object()
    headers.add("X-Request-ID", request_globals.get("request_id", ""))
    decision = request_globals.get("rate_limit")
    if decision is not None:
        headers.add("X-RateLimit-Limit", str(decision.limit))
        headers.add("X-RateLimit-Remaining", str(decision.remaining))
        headers.add("X-RateLimit-Reset", str(decision.reset_at))
    return response
