"""Signing in and out, and the one-time link's "choose your password" form;
after signing in, a person lands on the inbox (web/inbox.py)."""

from flask import current_app, redirect, render_template, request, url_for

from ..api.ratelimit import client_address
from ..errors import ApiError, ValidationError
from ..services import sign_in as signing_in
from ..services import users
from . import session
from .blueprint import PREFIX, blp
from .forms import SEE_OTHER


@blp.route("/sign-in")
def sign_in_form():
    if session.current_user() is not None:
        return redirect(_next_page(), SEE_OTHER)
    return render_template("app/sign_in.html", next=_next_page(), email="")


@blp.route("/sign-in", methods=["POST"])
def sign_in():
    form = request.form
    address = client_address(current_app.config, request)
    try:
        _, _, token = signing_in.sign_in(form.get("email"), form.get("password"), address)
    except ApiError as error:
        return _sign_in_refused(error, form.get("email", ""))
    return session.start(redirect(_next_page(), SEE_OTHER), token)


def _sign_in_refused(error, email):
    page = render_template(
        "app/sign_in.html", next=_next_page(), email=email[:254], error=error.message
    )
    return page, error.status, error.headers


@blp.route("/sign-out", methods=["POST"])
def sign_out():
    return session.end(redirect(url_for("web.sign_in_form"), SEE_OTHER))


@blp.route("/welcome/<token>")
def welcome_form(token):
    link = users.open_link(token)
    return _welcome_page(link)


@blp.route("/welcome/<token>", methods=["POST"])
def welcome(token):
    form = request.form
    link = users.open_link(token)
    try:
        user = users.use_link(token, form.get("password"), form.get("password_again"))
    except ValidationError as error:
        return _welcome_page(link, error.message), error.status
    _, token = signing_in.start_session(user)
    return session.start(redirect(url_for("web.home"), SEE_OTHER), token)


def _welcome_page(link, error=None):
    return render_template(
        "app/welcome.html",
        user=link.user,
        purpose=link.purpose,
        min_chars=users.PASSWORD_MIN_CHARS,
        error=error,
    )


def _next_page():
    """Where to go after signing in: a page of /app named by ?next=, else
    the inbox (never another site: `//evil.example` is refused too; nor
    a line break, which no Location header can carry: it was a 500)."""
    wanted = request.values.get("next", "")
    within = wanted == PREFIX or wanted.startswith((f"{PREFIX}/", f"{PREFIX}?"))
    if within and "\\" not in wanted and wanted.isprintable():
        return wanted
    return url_for("web.home")
