import json

import marshmallow as ma
from marshmallow import fields, validate, validates_schema

from ...models.messages import DIRECTIONS, MEDIA_TYPES, OUTBOUND_STATUSES, SENDER_TYPES
from ..pagination import ListQuery
from .common import UtcDateTime
from .rendered import RenderedSchema

MAX_TEXT = 4096
# A message's metadata, written as compact JSON: a page of 100 messages
# carrying 5 MB each was half a gigabyte to encode in one go.
MAX_METADATA_CHARS = 16_384


def _check_metadata_size(metadata):
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")))
    if size > MAX_METADATA_CHARS:
        raise ma.ValidationError(f"{size:,} characters as JSON; at most {MAX_METADATA_CHARS:,}")


class MessageErrorSchema(ma.Schema):
    code = fields.String()
    title = fields.String()
    details = fields.Raw(allow_none=True)


class EditSchema(ma.Schema):
    text = fields.String(allow_none=True)
    caption = fields.String(allow_none=True)
    replaced_at = fields.String(metadata={"description": "When this version was replaced"})


class MessageSchema(RenderedSchema):
    id = fields.String()
    conversation_id = fields.String()
    contact_id = fields.String(allow_none=True)
    channel_id = fields.String(allow_none=True)
    direction = fields.String(metadata={"enum": list(DIRECTIONS)})
    sender_type = fields.String(metadata={"enum": list(SENDER_TYPES)})
    author_user_id = fields.String(
        allow_none=True,
        metadata={
            "description": "The workspace user who wrote a human message in the inbox "
            "(null for the agent, the contact, and messages sent through the API)"
        },
    )
    type = fields.String(metadata={"description": "text, image, audio, video, document, ..."})
    text = fields.String(allow_none=True)
    caption = fields.String(allow_none=True)
    media_url = fields.String(allow_none=True)
    media_mime_type = fields.String(allow_none=True)
    external_id = fields.String(allow_none=True, metadata={"description": "The network's id"})
    reply_to_id = fields.String(allow_none=True)
    status = fields.String(
        metadata={
            "enum": [*OUTBOUND_STATUSES, "received"],
            "description": "Outbound: queued, sent, delivered, read or failed. Inbound: received",
        }
    )
    error = fields.Nested(MessageErrorSchema, allow_none=True)
    metadata = fields.Dict()
    edit_history = fields.List(fields.Nested(EditSchema))
    sent_at = UtcDateTime(allow_none=True)
    delivered_at = UtcDateTime(allow_none=True)
    read_at = UtcDateTime(allow_none=True)
    failed_at = UtcDateTime(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()
    edited_at = UtcDateTime(allow_none=True)
    deleted_at = UtcDateTime(allow_none=True)


class TemplateSchema(ma.Schema):
    """A WhatsApp message template Meta has approved for the business."""

    name = fields.String(
        required=True,
        validate=validate.Regexp(r"^[a-z0-9_]{1,512}$", error="Lowercase letters, digits, _."),
        metadata={"description": "The approved template's name"},
    )
    language = fields.String(
        required=True,
        validate=validate.Regexp(
            r"^[a-z]{2,3}(_[A-Z]{2})?$", error="A code such as en_US or pt_BR."
        ),
        metadata={"description": "The template's language code, e.g. en_US, pt_BR"},
    )
    parameters = fields.List(
        fields.String(validate=validate.Length(min=1, max=1024)),
        validate=validate.Length(max=50),
        metadata={"description": "The body's {{1}}, {{2}}, ... in order, as text"},
    )


class MessageCreateSchema(ma.Schema):
    type = fields.String(
        load_default="text",
        validate=validate.OneOf(("text", *MEDIA_TYPES, "template")),
        metadata={
            "description": "text (default), or image, audio, video, document by URL, "
            "or template (WhatsApp: an approved template, outside the 24-hour window too)"
        },
    )
    template = fields.Nested(TemplateSchema)
    text = fields.String(validate=validate.Length(min=1, max=MAX_TEXT))
    caption = fields.String(validate=validate.Length(min=1, max=1024))
    media_url = fields.String(validate=validate.Length(min=1, max=2048))
    media_mime_type = fields.String(
        validate=validate.Regexp(r"^[a-z]+/[A-Za-z0-9.+-]+$", error="Not a MIME type.")
    )
    sender_type = fields.String(
        load_default="human",
        validate=validate.OneOf(("human", "agent")),
        metadata={"description": "human (default) or agent"},
    )
    reply_to_id = fields.UUID()
    metadata = fields.Dict(
        keys=fields.String(),
        validate=_check_metadata_size,
        metadata={
            "description": "Yours to keep on the message: at most "
            f"{MAX_METADATA_CHARS:,} characters written as compact JSON"
        },
    )


class IdempotencyHeaders(ma.Schema):
    class Meta:
        unknown = ma.EXCLUDE

    idempotency_key = fields.String(
        data_key="Idempotency-Key",
        validate=validate.Regexp(
            r"^[\x21-\x7e]{1,255}$", error="1 to 255 visible ASCII characters."
        ),
        metadata={
            "description": "Repeating a request with the same key within 24 hours returns the "
            "first result and creates nothing; the same key with a different body is 409."
        },
    )


class MessageEditSchema(ma.Schema):
    text = fields.String(validate=validate.Length(min=1, max=MAX_TEXT))
    caption = fields.String(validate=validate.Length(min=1, max=1024))

    @validates_schema
    def one_change(self, data, **kwargs):
        if not data:
            raise ma.ValidationError("Give text (text messages) or caption (media).", "text")
        if len(data) > 1:
            raise ma.ValidationError("Give text or caption, not both.", "caption")


class MessageListQuery(ListQuery):
    SORT_FIELDS = ("created_at",)
