"""The JSON encoder of every response."""

import json
from datetime import date, datetime

from flask import stream_with_context
from flask.json.provider import DefaultJSONProvider

from ..formats import utc_timestamp
from ..models.sqljson import RawJson
from ..models.streamed import Streamed
from ..turns import give_way_if_due

# A streamed body is written in parts of at least this many characters: a
# page of small items is still one write.
WRITE_CHARS = 65_536


class ApiJSONProvider(DefaultJSONProvider):
    """Times as ISO 8601 UTC with Z (Flask's default is an HTTP date), in
    the encoder itself: objects render to plain dicts holding datetimes,
    and the C encoder calls back only for those instead of every value
    being walked in Python first."""

    sort_keys = False

    def __init__(self, app):
        super().__init__(app)
        # Response bodies share one compact encoder; json.dumps with options
        # builds a new one for every call.
        self._body_encoder = json.JSONEncoder(
            default=self.default, ensure_ascii=self.ensure_ascii, separators=(",", ":")
        )

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
            body = self._body_encoder.encode(obj)
        return self._app.response_class(f"{body}\n", mimetype=self.mimetype)

    def _with_raw_data(self, obj):
        """A body whose `data` SQLite already wrote (a page): that text goes in as it is."""
        return f'{{"data":{obj["data"].text}{self._after_data(obj)}'

    def _in_steps(self, obj):
        """A body whose `data` is read while it is written (a Streamed):
        one item at a time, the loop's turn given between them, so that
        neither the whole body nor its encoding is ever held at once."""
        parts, size = ['{"data":['], 0
        for index, item in enumerate(obj["data"]):
            parts.append(("," if index else "") + self._body_encoder.encode(item))
            size += len(parts[-1])
            if size >= WRITE_CHARS:
                yield "".join(parts)
                parts, size = [], 0
            give_way_if_due()
        parts.append(f"]{self._after_data(obj)}\n")
        yield "".join(parts)

    def _after_data(self, obj):
        """What follows `data` in the body: its other members, and the end."""
        rest = self._body_encoder.encode(
            {key: value for key, value in obj.items() if key != "data"}
        )
        return f",{rest[1:]}" if rest != "{}" else "}"
