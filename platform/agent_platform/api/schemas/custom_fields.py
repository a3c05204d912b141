import marshmallow as ma
from marshmallow import fields, validate

from ...services.custom_fields import FIELD_TYPES
from ..pagination import ListQuery
from .common import Name, UtcDateTime
from .rendered import RenderedSchema


class CustomFieldSchema(RenderedSchema):
    """Documents CustomField.as_dict(), which renders it."""

    id = fields.String()
    company_id = fields.String()
    name = fields.String()
    field_type = fields.String(metadata={"enum": list(FIELD_TYPES)})
    options = fields.List(fields.String())
    is_required = fields.Boolean()
    display_order = fields.Integer()
    is_archived = fields.Boolean()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class CustomFieldCreateSchema(ma.Schema):
    name = Name(required=True, validate=validate.Length(min=1, max=100))
    field_type = fields.String(required=True, validate=validate.OneOf(FIELD_TYPES))
    options = fields.List(
        fields.String(validate=validate.Length(min=1, max=100)),
        validate=validate.Length(max=500),
        metadata={"description": "Required and non-empty for select and multiselect"},
    )
    is_required = fields.Boolean()
    display_order = fields.Integer(validate=validate.Range(min=0, max=1_000_000))


class CustomFieldUpdateSchema(CustomFieldCreateSchema):
    """Every field optional (PATCH)."""

    def __init__(self, **kwargs):
        # Top-level fields only: nested objects given keep their required fields.
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


class CustomFieldListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "display_order", "name", "updated_at")

    include_archived = fields.Boolean(load_default=False)
