import marshmallow as ma
from marshmallow import fields, pre_load, validate

from ...services import channels, contacts
from ..pagination import ListQuery
from .common import Name, UtcDateTime
from .rendered import RenderedSchema

CUSTOM_FIELDS_DOC = (
    "Values by custom field name, checked against the field's type and options; required "
    "fields must have a value; archived fields cannot be written; null removes a value."
)


# A contact has an identity on the network of each channel type.
IDENTITY_TYPES = channels.type_names()
NETWORKS = f"{', '.join(IDENTITY_TYPES[:-1])} or {IDENTITY_TYPES[-1]}"


class IdentitySchema(ma.Schema):
    type = fields.String(
        required=True,
        validate=validate.OneOf(IDENTITY_TYPES),
        metadata={"description": f"The network: {NETWORKS}"},
    )
    external_id = fields.String(
        required=True,
        validate=validate.Length(min=1, max=254),
        metadata={"description": "wa_id, Telegram chat id, e-mail address or widget visitor id"},
    )
    channel_id = fields.String(dump_only=True, allow_none=True)
    created_at = UtcDateTime(dump_only=True)


class ContactSchema(RenderedSchema):
    @staticmethod
    def render(obj):
        return contacts.render(obj)

    id = fields.String()
    name = fields.String()
    phone = fields.String(allow_none=True, metadata={"description": "E.164"})
    email = fields.String(allow_none=True)
    custom_fields = fields.Dict(metadata={"description": "Values by custom field name"})
    identities = fields.List(fields.Nested(IdentitySchema))
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


# What formats.phone accepts, as one pattern: + or 00, a country code
# and 7 to 15 digits in all, separators between them; or the digits alone.
_SEPARATOR = r"[ ().\-\u00a0\u2010\u2011]*"
PHONE_PATTERN = (
    rf"^\s*(\+{_SEPARATOR}|00{_SEPARATOR})[1-9]({_SEPARATOR}[0-9]){{6,14}}{_SEPARATOR}\s*$"
    r"|^\s*[1-9][0-9]{6,14}\s*$"
)
# The filter's: "+" optional (a bare + in a query string arrives as a space).
PHONE_FILTER_PATTERN = rf"^$|^\s*\+?{_SEPARATOR}[1-9]({_SEPARATOR}[0-9]){{6,14}}{_SEPARATOR}\s*$"


class ContactCreateSchema(ma.Schema):
    name = Name(validate=validate.Length(max=200))
    phone = fields.String(
        allow_none=True,
        metadata={
            "description": (
                "With its country code: +15557014422, +1 555-701-4422 or 15557014422; "
                "stored as E.164 (else 400 INVALID_PHONE_FORMAT)"
            ),
            "pattern": PHONE_PATTERN,
        },
    )
    email = fields.String(
        allow_none=True, validate=validate.Length(max=254), metadata={"format": "email"}
    )
    custom_fields = fields.Dict(
        keys=fields.String(), allow_none=True, metadata={"description": CUSTOM_FIELDS_DOC}
    )
    identities = fields.List(
        fields.Nested(IdentitySchema),
        allow_none=True,
        validate=validate.Length(max=20),
        metadata={"description": "The contact's identities on the networks (PATCH replaces them)"},
    )


class ContactUpdateSchema(ContactCreateSchema):
    """Every field optional (PATCH); custom_fields are merged by name."""

    def __init__(self, **kwargs):
        # Top-level fields only: nested objects given keep their required fields.
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


class ContactListQuery(ListQuery):
    """Also `custom_field[<name>]=value` (any number), matched exactly."""

    SORT_FIELDS = ("created_at", "name", "updated_at")

    q = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "Part of the name, phone or e-mail"},
    )
    phone = fields.String(
        metadata={
            "description": "Exact E.164 phone ('+' optional)",
            "pattern": PHONE_FILTER_PATTERN,
        }
    )
    email = fields.String(metadata={"description": "Exact e-mail (any case)"})
    channel_id = fields.UUID(metadata={"description": "Contacts who wrote on this channel"})
    custom_field = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        metadata={
            "description": "custom_field[<name>]=value (or custom_field.<name>=value), any number",
            # As OpenAPI names the bracket form, so clients and generators send it.
            "style": "deepObject",
            "explode": True,
        },
    )

    @pre_load
    def gather_custom_fields(self, data, **kwargs):
        plain, wanted = {}, {}
        for key in data:
            name = _custom_field_name(key)
            if name is None:
                plain[key] = data[key]
            else:
                wanted[name] = data[key]
        if wanted:
            plain["custom_field"] = wanted
        return plain


def _custom_field_name(key):
    """`name` of custom_field[name] or custom_field.name, else None."""
    if key.startswith("custom_field[") and key.endswith("]"):
        return key[len("custom_field[") : -1]
    if key.startswith("custom_field."):
        return key.removeprefix("custom_field.")
    return None
