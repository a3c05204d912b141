import marshmallow as ma
from marshmallow import fields, validate

from ...services.users import (
    EMAIL_PATTERN,
    LINK_PURPOSES,
    PASSWORD_MAX_CHARS,
    PASSWORD_MIN_CHARS,
    ROLES,
)
from ..pagination import ListQuery
from .common import Name, UtcDateTime
from .rendered import RenderedSchema


class UserSchema(RenderedSchema):
    """Documents User.as_dict(), which renders it (never the password hash)."""

    id = fields.String()
    workspace_id = fields.String()
    email = fields.String(metadata={"description": "Lower-case; unique across the instance"})
    name = fields.String()
    role = fields.String(metadata={"enum": list(ROLES)})
    active = fields.Boolean(metadata={"description": "False: deactivated, cannot sign in"})
    has_password = fields.Boolean(metadata={"description": "False until the user chooses one"})
    last_sign_in_at = UtcDateTime(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class UserCreatedSchema(UserSchema):
    """The service renders it: the user plus the link that lets them in."""

    invite_url = fields.String(
        allow_none=True,
        metadata={
            "description": "One-time link to choose a password (null when a password was given)"
        },
    )

    @staticmethod
    def render(obj):
        return obj


class UserCreateSchema(ma.Schema):
    email = fields.String(
        required=True,
        validate=[validate.Length(min=5, max=254), validate.Regexp(EMAIL_PATTERN)],
        metadata={"pattern": EMAIL_PATTERN, "description": "Stored lower-cased"},
    )
    name = Name(required=True, validate=validate.Length(min=1, max=200))
    role = fields.String(load_default="agent", validate=validate.OneOf(ROLES))
    password = fields.String(
        load_only=True,
        validate=validate.Length(min=PASSWORD_MIN_CHARS, max=PASSWORD_MAX_CHARS),
        metadata={"description": "Set it now instead of sending the one-time link"},
    )


class UserUpdateSchema(ma.Schema):
    name = Name(validate=validate.Length(min=1, max=200))
    role = fields.String(validate=validate.OneOf(ROLES))
    active = fields.Boolean(metadata={"description": "false ends the user's sessions"})


class UserListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name", "email")


class SignInLinkSchema(ma.Schema):
    user_id = fields.String()
    purpose = fields.String(metadata={"enum": list(LINK_PURPOSES)})
    url = fields.String(metadata={"description": "Valid once, until expires_at"})
    expires_at = UtcDateTime()
