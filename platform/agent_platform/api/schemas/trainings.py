import marshmallow as ma
from marshmallow import fields, validate

from ...models.trainings import MAX_TITLE, STATUSES, TYPES
from ..pagination import ListQuery
from .common import HttpUrl, UtcDateTime
from .rendered import RenderedSchema

TYPE_DOC = (
    "text (title, content), qa (question, answer), url (url, optional title: the page is "
    "fetched), document (multipart upload of a .txt/.md/.html/.csv `file`, optional title)"
)


class TrainingSchema(RenderedSchema):
    """A training as the model renders it (Training.as_dict): the fields its
    type has no use for are null."""

    id = fields.String()
    agent_id = fields.String()
    type = fields.String(metadata={"enum": list(TYPES)})
    status = fields.String(metadata={"enum": list(STATUSES)})
    failure_reason = fields.String(
        allow_none=True, metadata={"description": "Why a url training failed"}
    )
    title = fields.String(allow_none=True)
    content = fields.String(allow_none=True, metadata={"description": "The (extracted) text"})
    question = fields.String(allow_none=True)
    answer = fields.String(allow_none=True)
    url = fields.String(allow_none=True)
    filename = fields.String(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class TrainingHitSchema(TrainingSchema):
    """A training as TrainingSchema shows it, plus its score."""

    score = fields.Float(
        metadata={
            "description": "Relevance (BM25 on SQLite, ts_rank on PostgreSQL); higher is better"
        }
    )

    @staticmethod
    def render(hit):
        return {**hit.as_dict(), "score": hit.score}


def _text(minimum, maximum):
    return fields.String(validate=validate.Length(min=minimum, max=maximum))


class TrainingCreateSchema(ma.Schema):
    """JSON, or form fields next to the uploaded `file` for a document."""

    type = fields.String(
        required=True, validate=validate.OneOf(TYPES), metadata={"description": TYPE_DOC}
    )
    title = _text(0, MAX_TITLE)
    content = _text(1, 5_000_000)
    question = _text(1, 2000)
    answer = _text(1, 20000)
    url = HttpUrl()


class TrainingUpdateSchema(ma.Schema):
    """The fields of the training's own type: text (title, content), qa (question,
    answer), url (url: fetched again, title), document (title)."""

    title = _text(0, MAX_TITLE)
    content = _text(1, 5_000_000)
    question = _text(1, 2000)
    answer = _text(1, 20000)
    url = HttpUrl()


class TrainingListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at")

    type = fields.String(validate=validate.OneOf(TYPES))
    status = fields.String(validate=validate.OneOf(STATUSES))


class TrainingSearchQuery(ma.Schema):
    q = fields.String(required=True, validate=validate.Length(min=1, max=500))
    limit = fields.Integer(load_default=10, validate=validate.Range(min=1, max=50))
    match = fields.String(
        load_default="all",
        validate=validate.OneOf(("all", "any")),
        metadata={"description": "Entries with all the terms (default) or any of them"},
    )
