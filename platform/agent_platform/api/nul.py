"""No text a request carries may hold NUL (U+0000), on either engine.

PostgreSQL's text columns cannot store it (SQLite's can), so a NUL that got
past the schemas failed there at the write, as a 500. It is refused
up front instead, as a 400 naming the field, the same on both engines: no
text the service keeps means anything by it, and a SQLite database holding
none can move to PostgreSQL. Names refuse every control character already
(schemas.common.Name). The checks cost a substring search per request; the
body is walked only when its text has the escape.
"""

from ..bodies import has_body
from ..errors import ValidationError
from .json_bodies import json_or_none

PROBLEM = "must not contain the NUL character (U+0000)"


def refuse_nul(req):
    """Refuse a query parameter, form field, uploaded file's name or JSON
    value (or key) holding NUL."""
    if "%00" in req.environ.get("QUERY_STRING", ""):
        _check_pairs(req.args.items(multi=True))
    if not has_body(req.environ):
        return  # most GETs: no JSON, form or file to look into
    if req.is_json and b"\\u0000" in req.get_data(cache=True):
        # Read with jsonbody's limits: Flask's reader was a 500 here, before
        # any key or view, on a document nested thousands deep.
        _check_json(json_or_none(req.get_data(cache=True)), "")
    elif req.mimetype in ("multipart/form-data", "application/x-www-form-urlencoded"):
        _check_pairs(req.form.items(multi=True))
        files = req.files.items(multi=True)
        _check_pairs((name, upload.filename or "") for name, upload in files)


def _check_pairs(pairs):
    """(name, text) pairs: query parameters, form fields, file fields and their files' names."""
    for name, text in pairs:
        if "\x00" in name or "\x00" in text:
            raise ValidationError(_shown(name), PROBLEM)


def _check_json(value, path):
    if isinstance(value, str) and "\x00" in value:
        raise ValidationError(path or "body", PROBLEM)
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{key}" if path else key
            if "\x00" in key:
                raise ValidationError(_shown(name), PROBLEM)
            _check_json(item, name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{path}[{index}]")


def _shown(name):
    """A field's name as the error can show it: its NUL escaped."""
    return name.replace("\x00", "\\u0000")
