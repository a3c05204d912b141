import marshmallow as ma
from marshmallow import fields, validate

from ...models.opportunities import COLUMN_KINDS
from ...money import CURRENCIES, DECIMAL_PATTERN
from ..pagination import ListQuery
from .common import Name, UtcDate, UtcDateTime
from .rendered import RenderedSchema

VALUE_DOC = (
    'An exact decimal as a string ("1234.50"), with at most the currency\'s '
    "decimal places (ISO 4217: 2 for EUR, 0 for JPY, 3 for KWD); never a JSON number"
)


class ColumnSchema(RenderedSchema):
    id = fields.String()
    name = fields.String()
    position = fields.Integer(metadata={"description": "0 for the first column"})
    probability = fields.Integer(metadata={"description": "Win probability, percent"})
    kind = fields.String(metadata={"enum": list(COLUMN_KINDS)})
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class ColumnCreateSchema(ma.Schema):
    name = Name(required=True, validate=validate.Length(min=1, max=100))
    probability = fields.Integer(required=True, validate=validate.Range(min=0, max=100))
    kind = fields.String(
        validate=validate.OneOf(COLUMN_KINDS),
        metadata={"description": "open (default), won or lost: an opportunity here is that"},
    )


class ColumnUpdateSchema(ColumnCreateSchema):
    def __init__(self, **kwargs):
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


class ColumnListQuery(ListQuery):
    """Newest first, as every listing; `sort=position&order=asc` is the board's order."""

    SORT_FIELDS = ("created_at", "position")


class ReorderSchema(ma.Schema):
    column_ids = fields.List(
        fields.UUID(),
        required=True,
        validate=validate.Length(min=1, max=50),
        metadata={"description": "Every column of the pipeline, each once, in the new order"},
    )


class DeleteColumnQuery(ma.Schema):
    move_to = fields.UUID(
        metadata={
            "description": "The column its opportunities move to (required when it holds any)"
        }
    )


class OpportunitySchema(RenderedSchema):
    id = fields.String()
    title = fields.String()
    contact_id = fields.String(allow_none=True)
    lead_id = fields.String(allow_none=True)
    value = fields.String(
        metadata={"description": "Exact decimal in the currency", "pattern": DECIMAL_PATTERN}
    )
    value_minor = fields.Integer(metadata={"description": "The value in minor units (cents)"})
    currency = fields.String(metadata={"enum": list(CURRENCIES)})
    column_id = fields.String()
    status = fields.String(
        metadata={"enum": list(COLUMN_KINDS), "description": "The column's kind"}
    )
    owner = fields.String(allow_none=True)
    expected_close_date = fields.Date(allow_none=True)
    lost_reason = fields.String(allow_none=True)
    closed_at = UtcDateTime(allow_none=True, metadata={"description": "When it was won or lost"})
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class OpportunityCreateSchema(ma.Schema):
    title = Name(required=True, validate=validate.Length(min=1, max=200))
    value = fields.String(
        required=True,
        validate=validate.Regexp(DECIMAL_PATTERN),
        metadata={"description": VALUE_DOC, "pattern": DECIMAL_PATTERN},
    )
    currency = fields.String(
        required=True, validate=validate.OneOf(CURRENCIES), metadata={"description": "ISO 4217"}
    )
    column_id = fields.UUID(metadata={"description": "Default: the first open column"})
    contact_id = fields.UUID()
    lead_id = fields.UUID()
    owner = Name(allow_none=True, validate=validate.Length(min=1, max=200))
    expected_close_date = UtcDate(allow_none=True)
    lost_reason = fields.String(allow_none=True, validate=validate.Length(max=1000))


class OpportunityUpdateSchema(ma.Schema):
    """Moves between columns go through POST .../move, which keeps the history."""

    title = Name(validate=validate.Length(min=1, max=200))
    value = fields.String(
        validate=validate.Regexp(DECIMAL_PATTERN),
        metadata={
            "description": VALUE_DOC + "; required with a new currency",
            "pattern": DECIMAL_PATTERN,
        },
    )
    currency = fields.String(validate=validate.OneOf(CURRENCIES))
    contact_id = fields.UUID(allow_none=True)
    lead_id = fields.UUID(allow_none=True)
    owner = Name(allow_none=True, validate=validate.Length(min=1, max=200))
    expected_close_date = UtcDate(allow_none=True)
    lost_reason = fields.String(allow_none=True, validate=validate.Length(max=1000))


class OpportunityListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at", "value_minor")

    column_id = fields.UUID()
    status = fields.String(validate=validate.OneOf(COLUMN_KINDS))
    owner = fields.String(validate=validate.Length(min=1, max=200))
    contact_id = fields.UUID()
    lead_id = fields.UUID()
    currency = fields.String(validate=validate.OneOf(CURRENCIES))


class MoveSchema(ma.Schema):
    column_id = fields.UUID(required=True)
    lost_reason = fields.String(
        allow_none=True,
        validate=validate.Length(max=1000),
        metadata={"description": "Why it was lost (kept with the opportunity)"},
    )


class MoveRecordSchema(RenderedSchema):
    id = fields.String()
    from_column_id = fields.String(allow_none=True, metadata={"description": "null: created"})
    to_column_id = fields.String()
    to_column_name = fields.String(metadata={"description": "Its name at the time"})
    actor = fields.String(allow_none=True)
    moved_at = UtcDateTime()


class MoveListQuery(ListQuery):
    """The latest move first, as every listing; `order=asc` reads first to last."""

    SORT_FIELDS = ("moved_at",)


class FiguresSchema(ma.Schema):
    currency = fields.String()
    count = fields.Integer()
    value = fields.String(metadata={"description": "Total value, exact decimal"})
    weighted = fields.String(metadata={"description": "Value x win probability, exact decimal"})


class ColumnFiguresSchema(ma.Schema):
    column_id = fields.String()
    name = fields.String()
    kind = fields.String(metadata={"enum": list(COLUMN_KINDS)})
    probability = fields.Integer()
    count = fields.Integer()
    values = fields.List(fields.Nested(FiguresSchema), metadata={"description": "Per currency"})


class SummarySchema(RenderedSchema):
    render = staticmethod(lambda obj: obj)

    columns = fields.List(fields.Nested(ColumnFiguresSchema))
    totals = fields.List(
        fields.Nested(FiguresSchema),
        metadata={"description": "Per currency; weighted is the forecast"},
    )
