"""What a request says of its body, read from the WSGI environ alone: the
request pipeline, the widget's fast path and the server's worker (whose
master imports nothing of the app) all ask it."""

# The codings the service reads: none but the body as it is. A body the
# client compressed would otherwise reach the JSON parser as bytes it cannot
# read, and be refused as malformed rather than for its coding.
_AS_IT_IS = ("", "identity")


def has_body(environ):
    """Whether the request says it carries a body: a Content-Length other
    than 0, or a Transfer-Encoding (chunked, of unknown length). Not
    wsgi.input_terminated: gunicorn sets it on every request, bodiless GETs
    included, and read each one's empty body here."""
    return environ.get("CONTENT_LENGTH", "") not in ("", "0") or "HTTP_TRANSFER_ENCODING" in environ


def unread_transfer_codings(environ):
    """The transfer codings other than chunked the body is sent in (gzip,
    deflate, compress: gunicorn passes them on, undecoded), or ""."""
    codings = (coding.strip() for coding in environ.get("HTTP_TRANSFER_ENCODING", "").split(","))
    return ", ".join(coding for coding in codings if coding.lower() not in (*_AS_IT_IS, "chunked"))


def unread_content_coding(environ):
    """The Content-Encoding of a body the service cannot read, or ""."""
    coding = environ.get("HTTP_CONTENT_ENCODING", "").strip()
    unread = coding.lower() not in _AS_IT_IS and has_body(environ)
    return coding if unread else ""
