"""URL-encoded form bodies (the inbox's forms, sign-in first of all) read
with a bound on their fields and the loop's turn given while they decode.

Werkzeug reads such a body whole and decodes it with urllib's parse_qsl in
one go: a body of 5 MB made of 2.5 million empty fields held every other
connection of the server 2 s (and about 160 MB), one of percent escapes
0.6 s, and the sign-in form reads its body before any key or session is
asked for. Multipart bodies have their bound already (Flask's
MAX_FORM_PARTS) and are parsed in steps.
"""

from urllib.parse import unquote_to_bytes

from flask import Request
from werkzeug.formparser import FormDataParser

from .. import turns
from ..errors import ValidationError

# Fields of a URL-encoded body, as MAX_FORM_PARTS bounds a multipart one's:
# the longest form of the inbox has some twenty.
MAX_FIELDS = 1000
# Characters of a field decoded between turns of the loop (about 2 ms of
# percent escapes).
STEP = 16384
# What werkzeug (and so Flask) puts in place of bytes that are not UTF-8.
_NOT_UTF8 = "werkzeug.url_quote"


class BoundedFormDataParser(FormDataParser):
    def _parse_urlencoded(self, stream, mimetype, content_length, options):
        text = stream.read().decode()
        fields = text.count("&") + 1
        if fields > MAX_FIELDS:
            raise ValidationError("body", f"a form of {fields:,} fields; at most {MAX_FIELDS:,}")
        return stream, self.cls(_pairs(text)), self.cls()


class BoundedFormRequest(Request):
    form_data_parser_class = BoundedFormDataParser


def _pairs(text):
    """The (name, value) pairs of a URL-encoded body, as parse_qsl reads
    them with blank values kept: empty fields skipped, a field without "="
    a name with an empty value."""
    pairs = []
    for field in text.split("&"):
        if field:
            name, _, value = field.partition("=")
            pairs.append((_decoded(name), _decoded(value)))
    return pairs


def _decoded(encoded):
    """`encoded` with "+" as a space and its percent escapes decoded, a
    STEP at a time."""
    encoded = encoded.replace("+", " ")
    if "%" not in encoded:
        return encoded
    return b"".join(_decoded_steps(encoded)).decode("utf-8", _NOT_UTF8)


def _decoded_steps(encoded):
    start = 0
    while start < len(encoded):
        end = start + STEP
        # Never between a "%" and its two digits: the next step starts at it.
        cut = encoded.rfind("%", end - 2, end)
        end = cut if cut > start else end
        yield unquote_to_bytes(encoded[start:end])
        turns.give_way_if_due()
        start = end
