"""Who is signed in, and what every page of /app builds on: the session
cookie, `current_user()`, the `signed_in` decorator (with an optional role),
and the CSRF check every state change passes.

The cookie holds a random token (only its hash is stored); it is HttpOnly,
SameSite=Lax, limited to /app, and Secure when the request came over HTTPS
(as the proxy says, behind server.proxy_hops trusted proxies). A person who
is not signed in still gets a form token (its own cookie), so the sign-in
and choose-a-password forms are protected too."""

import functools
import hmac
import secrets
from urllib.parse import urlsplit

from flask import current_app, redirect, request, url_for

from ..api.errors import error_response
from ..errors import Forbidden
from ..services import sign_in
from .blueprint import PREFIX, blp, wants_json

SESSION_COOKIE = "agent_platform_session"
FORM_COOKIE = "agent_platform_form"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


# Kept in the request's environ, not in g: an app context (and its g) may
# outlive one request, as in tests that hold one open.
_SESSION_KEY = "agent_platform.web_session"
_FORM_TOKEN_KEY = "agent_platform.web_form_token"


def current_session():
    """The live session of this request, or None (looked up once a request)."""
    environ = request.environ
    if _SESSION_KEY not in environ:
        environ[_SESSION_KEY] = sign_in.session_of(request.cookies.get(SESSION_COOKIE))
    return environ[_SESSION_KEY]


def current_user():
    session = current_session()
    return session.user if session else None


def signed_in(view=None, role=None):
    """A view for signed-in users (of `role`, when given). Anyone else: a
    page is sent to sign in, a fetch gets 401 JSON; the wrong role is 403."""
    if view is None:
        return functools.partial(signed_in, role=role)

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        user = current_user()
        if user is None:
            return _not_signed_in()
        if role is not None and user.role != role:
            raise Forbidden(f"This page is for the {role}s of your workspace.", code="FORBIDDEN")
        return view(*args, **kwargs)

    return wrapper


def _not_signed_in():
    if wants_json():
        return error_response("NOT_SIGNED_IN", "Sign in first: your session ended.", 401)
    return redirect(url_for("web.sign_in", next=_back_to()))


def _back_to():
    """The page to return to after signing in: this one, or for a form's
    POST the page the form was on (an action's address answers only POST)."""
    if request.method in SAFE_METHODS:
        return request.full_path.rstrip("?")
    referrer = urlsplit(request.headers.get("Referer", ""))
    if referrer.netloc in _own_hosts() and referrer.path.startswith(PREFIX):
        return referrer.path
    return None


def csrf_token():
    """The token forms and fetches send back: the session's, or, before
    signing in, the form cookie's (set by remember_form_token)."""
    session = current_session()
    if session is not None:
        return session.csrf_token
    environ = request.environ
    if _FORM_TOKEN_KEY not in environ:
        environ[_FORM_TOKEN_KEY] = request.cookies.get(FORM_COOKIE) or secrets.token_urlsafe(32)
    return environ[_FORM_TOKEN_KEY]


@blp.before_request
def check_csrf():
    """Every state change carries this session's token (form field or
    header) and, when the browser says where it comes from, this origin."""
    if request.method in SAFE_METHODS:
        return
    origin = request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc not in _own_hosts():
        raise Forbidden(f"Requests from {origin} are not accepted.", code="CSRF_ORIGIN_MISMATCH")
    sent = request.headers.get(CSRF_HEADER) or request.form.get(CSRF_FIELD) or ""
    expected = _expected_token()
    if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        if request.cookies.get(SESSION_COOKIE) and current_session() is None:
            return _not_signed_in()  # its form's token ended with the session
        raise Forbidden(
            "This form has expired or did not come from this site: reload the page and try again.",
            code="CSRF_TOKEN_INVALID",
        )


def _expected_token():
    session = current_session()
    return session.csrf_token if session else request.cookies.get(FORM_COOKIE, "")


def _own_hosts():
    return {request.host, urlsplit(current_app.config["SERVER_PUBLIC_URL"]).netloc}


@blp.after_request
def remember_form_token(response):
    token = request.environ.get(_FORM_TOKEN_KEY)
    if token is not None and request.cookies.get(FORM_COOKIE) != token:
        _set_cookie(response, FORM_COOKIE, token)
    return response


def start(response, token):
    """Sign the browser in: the session's cookie on `response`."""
    _set_cookie(response, SESSION_COOKIE, token)
    return response


def end(response):
    """Sign the browser out: its session ends and its cookie is cleared."""
    sign_in.sign_out(request.cookies.get(SESSION_COOKIE))
    response.delete_cookie(SESSION_COOKIE, path=PREFIX, httponly=True, samesite="Lax")
    return response


def _set_cookie(response, name, value):
    # A session cookie (no Max-Age): the server decides when a session ends.
    response.set_cookie(name, value, path=PREFIX, httponly=True, samesite="Lax", secure=is_https())


def is_https():
    """Whether the browser's request came over HTTPS: the connection's, or
    what the nearest trusted proxy says (X-Forwarded-Proto)."""
    hops = current_app.config["SERVER_PROXY_HOPS"]
    if not hops:
        return request.is_secure
    said = [part.strip() for part in request.headers.get("X-Forwarded-Proto", "").split(",")]
    return len(said) >= hops and said[-hops].lower() == "https"


@blp.app_context_processor
def _template_globals():
    return {"csrf_token": csrf_token, "current_user": current_user, "CSRF_FIELD": CSRF_FIELD}
