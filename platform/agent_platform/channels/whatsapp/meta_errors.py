"""Meta's error objects, read as text whatever their shape: `code`,
`title` or `message`, and `error_data.details`, in the Graph API's answers
and in the webhooks' `errors`. A field of another shape (an object where
text belongs) failed a send as an internal error and a callback with a 500,
or was stored as the error's title."""


def error_fields(error):
    """(code, title, details) of `error` (any decoded JSON), each text or None."""
    error = error if isinstance(error, dict) else {}
    code = error.get("code")
    code = str(code) if type(code) in (int, str) and code != "" else None
    data = error.get("error_data") if isinstance(error.get("error_data"), dict) else {}
    title = _text(error.get("title")) or _text(error.get("message"))
    details = _text(data.get("details")) or _text(error.get("details"))
    return code, title, details or _text(error.get("error_user_msg"))


def _text(value):
    return value if isinstance(value, str) and value else None
