"""The JSON encoder of every response."""

from datetime import date, datetime

from flask.json.provider import DefaultJSONProvider

from ..services.formats import utc_timestamp


class ApiJSONProvider(DefaultJSONProvider):
    """Times as ISO 8601 UTC with Z (Flask's default is an HTTP date), in
    the encoder itself: objects render to plain dicts holding datetimes,
    and the C encoder calls back only for those instead of every value
    being walked in Python first."""

    sort_keys = False

    @staticmethod
    def default(value):
        if isinstance(value, datetime):
            return utc_timestamp(value)
        if isinstance(value, date):
            return value.isoformat()
        return DefaultJSONProvider.default(value)
