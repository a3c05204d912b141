import marshmallow as ma
from marshmallow import fields, validate

from ...services import channels
from ..pagination import ListQuery
from .common import Name, UtcDateTime
from .rendered import RenderedSchema

CHANNEL_TYPES = channels.type_names()
SETTINGS_DOC = (
    f"Per type. {channels.settings_description()} Secrets (*) are write-only: they read "
    "back as <name>_set true/false. A null value removes a setting."
)


class ChannelSettingsSchema(ma.Schema):
    """The settings object of a channel: keys depend on its type (see Channel.settings);
    secrets read back only as <name>_set true/false."""

    class Meta:
        unknown = ma.INCLUDE  # documented as an open object: its keys vary by type

    def dump(self, obj, *, many=None):
        return obj.public_settings()


class ChannelSchema(RenderedSchema):
    id = fields.String()
    name = fields.String()
    type = fields.String(metadata={"enum": list(CHANNEL_TYPES)})
    status = fields.String(metadata={"enum": ["connected", "disconnected"]})
    agent_id = fields.String(allow_none=True)
    is_active = fields.Boolean()
    # The ChannelSettings component, not an object of its own: generators name
    # an inline object after its parent and field (Channel + settings), which
    # took ChannelSettings's name and dropped Channel from generated clients.
    settings = fields.Nested(ChannelSettingsSchema, metadata={"description": SETTINGS_DOC})
    connected_at = UtcDateTime(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class ChannelCreateSchema(ma.Schema):
    name = Name(required=True, validate=validate.Length(min=1, max=200))
    type = fields.String(required=True, validate=validate.OneOf(CHANNEL_TYPES))
    settings = fields.Dict(keys=fields.String(), metadata={"description": SETTINGS_DOC})


class ChannelUpdateSchema(ma.Schema):
    """Rename, or change some settings (those not given stay)."""

    name = Name(validate=validate.Length(min=1, max=200))
    settings = fields.Dict(keys=fields.String(), metadata={"description": SETTINGS_DOC})


class SettingsBodySchema(ma.Schema):
    """PUT body: the whole settings object of the channel's type."""

    class Meta:
        unknown = ma.INCLUDE


class ConnectSchema(ma.Schema):
    agent_id = fields.UUID(required=True)


class ChannelListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name", "updated_at")

    type = fields.String(validate=validate.OneOf(CHANNEL_TYPES))
    agent_id = fields.UUID()
    status = fields.String(validate=validate.OneOf(("connected", "disconnected")))


class QrCodeQuery(ma.Schema):
    format = fields.String(
        load_default="png",
        validate=validate.OneOf(("png", "svg")),
        metadata={"description": "png (default) or svg"},
    )
    scale = fields.Integer(
        load_default=8,
        validate=validate.Range(min=1, max=40),
        metadata={"description": "Pixels per module, 1 to 40 (default 8)"},
    )


class WidgetColorsSchema(ma.Schema):
    primary = fields.String(allow_none=True)
    background = fields.String(allow_none=True)
    text = fields.String(allow_none=True)


class WidgetConfigSchema(ma.Schema):
    channel_id = fields.String()
    title = fields.String()
    greeting = fields.String(allow_none=True)
    colors = fields.Nested(WidgetColorsSchema)
    allowed_origins = fields.List(fields.String())
    position = fields.String(metadata={"description": "bottom-right or bottom-left"})
    launcher_text = fields.String(allow_none=True)
    require_name = fields.Boolean()
    require_email = fields.Boolean()
    identity_verification = fields.Boolean(
        metadata={
            "description": "Whether settings.identity_secret is set (see docs/channels/website.md)"
        }
    )


class WidgetSchema(ma.Schema):
    channel_id = fields.String()
    page_url = fields.String(metadata={"description": "The widget's own page (the QR link)"})
    script_url = fields.String()
    snippet = fields.String(metadata={"description": "HTML to paste before </body>"})
    config = fields.Nested(WidgetConfigSchema)
