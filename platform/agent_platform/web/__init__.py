"""The inbox's web pages at /app, for the people of a workspace: HTTP only
(forms, cookies, templates), every decision in services/. Not part of the
REST API: no API key (a person signs in; web/session.py), no OpenAPI, and
its errors are HTML pages (JSON for fetch requests), never the API's."""

from flask import make_response

from ..api.errors import answer_unrouted

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
    # HTML page too. No blueprint is known before routing, so the
    # blueprint's own error handlers never see it: the app's hand it over.
    answer_unrouted(app, PREFIX, _unrouted_page)


def _unrouted_page(error):
    return secure_headers(make_response(error_page(error)))
