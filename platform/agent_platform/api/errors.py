"""The one error renderer: every failure leaves as {"error": {code, message, status}}."""

import logging

from flask import current_app, g, jsonify, request
from werkzeug.exceptions import HTTPException

from .. import storage
from ..errors import PayloadTooLarge

log = logging.getLogger("agent_platform.api")

REQUIRED_MESSAGE = "Missing data for required field."


def error_response(code, message, status, headers=None):
    response = jsonify({"error": {"code": code, "message": message, "status": status}})
    response.status_code = status
    response.headers.update(headers or {})
    return response


def handle_api_error(error):
    return error_response(error.code, error.message, error.status, error.headers)


def handle_http_exception(error):
    """Werkzeug's and webargs' HTTP errors, in our shape; a path no route
    matched under a part of the site with pages of its own gets its page."""
    page = _unrouted_page(error)
    if page is not None:
        return page
    messages = (getattr(error, "data", None) or {}).get("messages")
    if messages is not None:
        return _validation_response(messages)
    if error.code == 404:
        message = f"No such endpoint: {request.method} {request.path}"
        return error_response("NOT_FOUND", message, 404)
    if error.code == 405:
        allowed = ", ".join(error.valid_methods or [])
        message = f"Method {request.method} is not allowed on {request.path}; allowed: {allowed}"
        return error_response("METHOD_NOT_ALLOWED", message, 405, {"Allow": allowed})
    if error.code == 413:
        return _payload_too_large()
    code = error.name.upper().replace(" ", "_").replace("'", "")
    return error_response(code, error.description or error.name, error.code)


def answer_unrouted(app, prefix, render):
    """Have `render(error)` answer the requests under `prefix` that no route
    matched (404, 405): the inbox's HTML pages (web.install). Asked on the
    error path only, where a hook before every request cost each API
    request its time."""
    app.extensions.setdefault("unrouted_pages", []).append((prefix, render))


def _unrouted_page(error):
    if request.routing_exception is not error:
        return None
    path = request.path
    for prefix, render in current_app.extensions.get("unrouted_pages", ()):
        if path == prefix or path.startswith(prefix + "/"):
            return render(error)
    return None


def handle_unexpected(error):
    """A bug: logged with the request id, answered without any internals.
    A database that cannot take writes is no bug: 503, logged once (storage.py)."""
    if isinstance(error, HTTPException):
        return handle_http_exception(error)
    unavailable = storage.unavailable(error)
    if unavailable is not None:
        return handle_api_error(unavailable)
    log.exception("unhandled error in request %s", g.get("request_id"))
    message = (
        f"An unexpected error occurred. Quote request id {g.get('request_id')} when reporting it."
    )
    return error_response("INTERNAL_ERROR", message, 500)


def _payload_too_large():
    return handle_api_error(PayloadTooLarge(current_app.config["LIMITS_MAX_BODY_BYTES"]))


def _validation_response(messages):
    problems = sorted(_problems(messages))
    missing = [field for field, problem in problems if problem == REQUIRED_MESSAGE]
    if missing:
        fields = ", ".join(missing)
        return error_response("MISSING_REQUIRED_FIELD", f"Missing required field: {fields}", 400)
    text = "; ".join(f"{field}: {problem}" for field, problem in problems)
    return error_response("VALIDATION_ERROR", text, 400)


# webargs keys its errors by location first; these are parts of the body.
BODY_LOCATIONS = ("json", "form", "json_or_form")


def _problems(messages):
    """Yield (field, problem) for each location's errors; body-level errors
    (marshmallow's "_schema") are named "body", parameters by their name."""
    for location, errors in messages.items():
        yield from _flatten(errors, ("body",) if location in BODY_LOCATIONS else ())


def _flatten(messages, path):
    """Yield (dotted field path, problem) from marshmallow's nested error dict."""
    if isinstance(messages, dict):
        for key, value in messages.items():
            yield from _flatten(value, path if key == "_schema" else _extend(path, str(key)))
    elif isinstance(messages, list):
        for item in messages:
            if isinstance(item, dict | list):
                yield from _flatten(item, path)
            else:
                yield (".".join(path) or "body", str(item))
    else:
        yield (".".join(path) or "body", str(messages))


def _extend(path, key):
    # "body" only names whole-body problems; fields are named on their own.
    return (key,) if path == ("body",) else path + (key,)
