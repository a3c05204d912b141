"""The JSON encoder of every response."""

import json
from datetime import date, datetime

import orjson
from flask import stream_with_context
from flask.json.provider import DefaultJSONProvider

from ..formats import utc_timestamp
from ..models.sqljson import RawJson
from ..models.streamed import Streamed
from ..turns import give_way_if_due

# A streamed body is written in parts of at least this many bytes: a page
# of small items is still one write.
WRITE_BYTES = 65_536


class ApiJSONProvider(DefaultJSONProvider):
    """Times as ISO 8601 UTC with Z (Flask's default is an HTTP date), in
    the encoder itself: objects render to plain dicts holding datetimes,
    and the C encoder calls back only for those instead of every value
    being walked in Python first."""

    sort_keys = False

    def __init__(self, app):
        super().__init__(app)
        # What orjson leaves to Python's encoder (see encoded); json.dumps
        # with options builds a new encoder for every call.
        self._body_encoder = json.JSONEncoder(
            default=self.default, ensure_ascii=self.ensure_ascii, separators=(",", ":")
        )

    def encoded(self, obj):
        """`obj` as compact JSON, in UTF-8: by orjson, ten times as fast as
        Python's C encoder on a body of short strings; by Python's encoder
        for what orjson refuses (an integer past 64 bits, a key not a
        string, a lone surrogate), which writes it as before: ASCII, escaped."""
        try:
            return orjson.dumps(obj, default=self.default, option=orjson.OPT_PASSTHROUGH_DATETIME)
        except orjson.JSONEncodeError:
            return self._body_encoder.encode(obj).encode()

    @staticmethod
    def default(value):
        if isinstance(value, datetime):
            return utc_timestamp(value)
        if isinstance(value, date):
            return value.isoformat()
        return DefaultJSONProvider.default(value)

    def response(self, *args, **kwargs):
        obj = self._prepare_response_obj(args, kwargs)
        if isinstance(obj, dict) and isinstance(obj.get("data"), Streamed):
            body = stream_with_context(self._in_steps(obj))
            return self._app.response_class(body, mimetype=self.mimetype)
        if isinstance(obj, dict) and isinstance(obj.get("data"), RawJson):
            body = self._with_raw_data(obj)
        elif self._app.debug:
            return super().response(*args, **kwargs)  # indented, for reading
        else:
            body = self.encoded(obj)
        return self._app.response_class(body + b"\n", mimetype=self.mimetype)

    def _with_raw_data(self, obj):
        """A body whose `data` SQLite already wrote (a page): that text goes in as it is."""
        return b'{"data":' + obj["data"].text.encode() + self._after_data(obj)

    def _in_steps(self, obj):
        """A body whose `data` is read while it is written (a Streamed):
        one item at a time, the loop's turn given between them, so that
        neither the whole body nor its encoding is ever held at once."""
        parts, size = [b'{"data":['], 0
        for index, item in enumerate(obj["data"]):
            parts.append((b"," if index else b"") + self.encoded(item))
            size += len(parts[-1])
            if size >= WRITE_BYTES:
                yield b"".join(parts)
                parts, size = [], 0
            give_way_if_due()
        parts.append(b"]" + self._after_data(obj) + b"\n")
        yield b"".join(parts)

    def _after_data(self, obj):
        """What follows `data` in the body: its other members, and the end."""
        rest = self.encoded({key: value for key, value in obj.items() if key != "data"})
        return b"," + rest[1:] if rest != b"{}" else b"}"
