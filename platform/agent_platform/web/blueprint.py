"""The /app blueprint, its security headers and its error pages."""

import logging

from flask import Blueprint, g, render_template, request
from werkzeug.exceptions import HTTPException

from .. import storage
from ..api.errors import error_response
from ..errors import ApiError

log = logging.getLogger("agent_platform.web")

PREFIX = "/app"
blp = Blueprint(
    "web",
    __name__,
    url_prefix=PREFIX,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)
# No inline script or style anywhere: every asset is a file of the package.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


@blp.after_request
def secure_headers(response):
    headers = response.headers
    headers["Content-Security-Policy"] = CSP
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "same-origin"
    if request.endpoint != "web.static":
        # A page may show a signed-in person's data: never kept by a cache.
        headers["Cache-Control"] = "no-store"
    return response


def wants_json():
    """A script's fetch asks for JSON; a browser's navigation for HTML."""
    accepted = request.accept_mimetypes
    return request.is_json or accepted.best_match(["text/html", "application/json"]) == (
        "application/json"
    )


def error_page(error):
    """An ApiError or HTTP error as an HTML page (JSON for a fetch)."""
    if isinstance(error, HTTPException):
        allowed = ", ".join(getattr(error, "valid_methods", None) or [])
        headers = {"Allow": allowed} if error.code == 405 else None
        error = ApiError(_http_message(error), _http_code(error), error.code, headers)
    if wants_json():
        return error_response(error.code, error.message, error.status, error.headers)
    page = render_template("app/error.html", status=error.status, message=error.message)
    return page, error.status, error.headers


def _http_message(error):
    if error.code == 404:
        return f"There is no page at {request.path}."
    if error.code == 405:
        return f"{request.method} is not allowed on {request.path}."
    return error.description or error.name


def _http_code(error):
    return error.name.upper().replace(" ", "_").replace("'", "")


@blp.errorhandler(ApiError)
@blp.errorhandler(HTTPException)
def _expected(error):
    return error_page(error)


@blp.errorhandler(Exception)
def _unexpected(error):
    unavailable = storage.unavailable(error)
    if unavailable is not None:
        return error_page(unavailable)
    log.exception("unhandled error in request %s", g.get("request_id"))
    message = f"Something went wrong. Quote request id {g.get('request_id')} when reporting it."
    return error_page(ApiError(message, code="INTERNAL_ERROR", status=500))
