"""The inbox's web pages at /app, for the people of a workspace: HTTP only
(forms, cookies, templates), every decision in services/. Not part of the
REST API: no API key (a person signs in; web/session.py), no OpenAPI, and
its errors are HTML pages (JSON for fetch requests), never the API's."""

from flask import request

# The modules add their routes to blp.
from . import (  # noqa: F401
    actions,
    agents,
    channels,
    events,
    inbox,
    integrations,
    knowledge,
    pages,
    session,
    team,
)
from .blueprint import PREFIX, blp, error_page, secure_headers


def install(app):
    app.register_blueprint(blp)
    # A path under /app that matches no route, or not with this method: an
    # HTML page too (no blueprint is known before routing, so its own error
    # handlers never see these).
    app.before_request(_unrouted_page)
    app.after_request(_headers)


def _under_app():
    return request.path == PREFIX or request.path.startswith(PREFIX + "/")


def _unrouted_page():
    if request.routing_exception is not None and _under_app():
        return error_page(request.routing_exception)
    return None


def _headers(response):
    return secure_headers(response) if _under_app() else response
