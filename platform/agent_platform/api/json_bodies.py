"""JSON request bodies as the API reads them: with jsonbody's limits, and
only when the request says it sends JSON. The parser of the operations'
arguments, the NUL check before them and the widget's routes read them so."""

from webargs.flaskparser import is_json_request

from .. import jsonbody
from ..bodies import has_body
from ..errors import UnsupportedMediaType, ValidationError

# Enough of a Content-Type to recognise it in an error message.
_MEDIA_TYPE_SHOWN = 100
# Members of an object or an array of a body: as many as any operation
# takes (1,000 holidays), and a bound on what marshmallow reads before it
# refuses (each member is read first: 100,000 identities took 2.6 s of the
# server's loop, 300,000 unknown fields 1.4 s).
MAX_MEMBERS = 1000
# Members of a whole body, counted before it is parsed: many times what any
# operation takes (1,000 identities of two fields), and a bound on what the
# parser builds (2.4 million numbers in arrays within MAX_MEMBERS took a
# second of the loop).
MAX_MEMBERS_IN_ALL = 20_000


def read_json(body):
    """The JSON document in `body` (bytes), read with jsonbody's limits,
    at most MAX_MEMBERS members in an object or an array and
    MAX_MEMBERS_IN_ALL in all (ValidationError naming what passes them);
    ValueError when it is not JSON. Flask's own reader meets a document
    nested thousands deep with a RecursionError, and loads a lone surrogate
    escape no database stores."""
    try:
        return jsonbody.loads(body, MAX_MEMBERS, MAX_MEMBERS_IN_ALL)
    except jsonbody.BodyError as error:
        raise ValidationError(error.field, error.problem) from None


def refuse_other_media(req, accepted):
    """A body in a type the operation does not read is refused (415), not
    taken for no body: a JSON document sent as text/plain would otherwise
    create a resource with none of its fields."""
    if has_body(req.environ) and not is_json_request(req):
        sent = req.headers.get("Content-Type", "")[:_MEDIA_TYPE_SHOWN] or "(none)"
        raise UnsupportedMediaType(
            f"Content-Type: {sent} is not read here; send the body as {accepted}."
        )


def json_or_none(body):
    """read_json's document, or None when `body` is not JSON (or empty)."""
    try:
        return read_json(body)
    except ValueError:  # not JSON, or not UTF-8
        return None
