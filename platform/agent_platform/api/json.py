"""The JSON encoder of every response."""

import json
from datetime import date, datetime

from flask.json.provider import DefaultJSONProvider

from ..formats import utc_timestamp
from ..models.sqljson import RawJson


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
        if isinstance(obj, dict) and isinstance(obj.get("data"), RawJson):
            body = self._with_raw_data(obj)
        elif self._app.debug:
            return super().response(*args, **kwargs)  # indented, for reading
        else:
            body = self._body_encoder.encode(obj)
        return self._app.response_class(f"{body}\n", mimetype=self.mimetype)

    def _with_raw_data(self, obj):
        """A body whose `data` SQLite already wrote (a page): that text goes in as it is."""
        rest = self._body_encoder.encode(
            {key: value for key, value in obj.items() if key != "data"}
        )
        return f'{{"data":{obj["data"].text}' + (f",{rest[1:]}" if rest != "{}" else "}")
