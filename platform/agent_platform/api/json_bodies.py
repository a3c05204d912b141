"""JSON request bodies as the API reads them: with jsonbody's limits, and
only when the request says it sends JSON. The parser of the operations'
arguments, the NUL check before them and the widget's routes read them so."""

from webargs.flaskparser import is_json_request

from .. import jsonbody
from ..bodies import has_body
from ..errors import UnsupportedMediaType, ValidationError

# Enough of a Content-Type to recognise it in an error message.
_MEDIA_TYPE_SHOWN = 100


def read_json(body):
    """The JSON document in `body` (bytes), read with jsonbody's limits
    (ValidationError naming what passes them); ValueError when it is not
    JSON. Flask's own reader meets a document nested thousands deep with a
    RecursionError, and loads a lone surrogate escape no database stores."""
    try:
        return jsonbody.loads(body)
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
