import marshmallow as ma
from marshmallow import fields, validate

from ..pagination import ListQuery
from .common import UtcDateTime
from .rendered import RenderedSchema


class ChannelEventSchema(RenderedSchema):
    id = fields.String()
    channel_id = fields.String()
    kind = fields.String(
        metadata={
            "description": "What happened: the network's field name for its notices "
            "(message_template_status_update, phone_number_quality_update, ...), errors "
            "(value-level errors), skipped, malformed, status_ignored, item_failed, "
            "credentials_verified, credentials_failed, media_download_failed, mark_read_failed"
        }
    )
    is_error = fields.Boolean()
    payload = fields.Dict(metadata={"description": "What the network sent, or what was found"})
    created_at = UtcDateTime()


class ChannelEventQuery(ListQuery):
    SORT_FIELDS = ("created_at",)

    kind = fields.String(validate=validate.Length(min=1, max=64))


class VerificationErrorSchema(ma.Schema):
    code = fields.String()
    title = fields.String()
    details = fields.Raw(allow_none=True)


class VerificationSchema(ma.Schema):
    channel_id = fields.String()
    checked_at = UtcDateTime()
    ok = fields.Boolean(metadata={"description": "Whether the network accepted the credentials"})
    details = fields.Dict(
        metadata={"description": "What the network says about the number (when ok)"}
    )
    error = fields.Nested(VerificationErrorSchema, metadata={"description": "When not ok"})
