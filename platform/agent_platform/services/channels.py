"""Channels: typed settings with write-only secrets, unique names, the plan
limit, connecting to one agent, public links as QR codes, the website widget."""

import io

from .. import formats
from ..channels import adapters
from ..db import transaction
from ..errors import Conflict, Forbidden, NotFound, ValidationError
from ..events import emit
from ..models import Agent, Channel, ChannelEvent, Message
from ..models.base import utcnow
from ..models.pagination import PageRequest, paginate


def type_names():
    """The channel types the API offers, in their order."""
    return adapters.type_names()


def settings_description():
    """Each type's settings in a line (the OpenAPI description of `settings`)."""
    return " ".join(f"{kind.type}: {kind.settings_doc}." for kind in adapters.types())


def not_found(channel_id):
    return NotFound(f"Channel {channel_id} not found (or not active).", code="CHANNEL_NOT_FOUND")


def get_channel(workspace_id, channel_id):
    return Channel.get_in_workspace(workspace_id, channel_id, not_found(channel_id))


def list_channels(workspace_id, paging, type=None, agent_id=None, status=None):
    query = Channel.in_workspace(workspace_id)
    if type:
        query = query.where(Channel.type == type)
    if agent_id:
        query = query.where(Channel.agent == agent_id)
    if status == "connected":
        query = query.where(Channel.agent.is_null(False))
    elif status == "disconnected":
        query = query.where(Channel.agent.is_null())
    return paginate(query, Channel, paging)


def create_channel(workspace_id, values, max_channels=None):
    with transaction():
        if max_channels is not None and Channel.active_count(workspace_id) >= max_channels:
            raise Forbidden(
                f"This plan allows {max_channels} channels per workspace; delete one first.",
                code="PLAN_LIMIT_REACHED",
            )
        _check_name_free(workspace_id, values["name"])
        settings = merged_settings(values["type"], {}, values.get("settings") or {})
        channel = Channel.create(
            workspace=workspace_id, name=values["name"], type=values["type"], settings=settings
        )
    return _activated(channel)


def update_channel(workspace_id, channel_id, changes):
    """Rename and/or change some settings (the others stay as they are)."""
    with transaction():
        channel = get_channel(workspace_id, channel_id)
        previous = channel.settings
        if "name" in changes:
            _check_name_free(workspace_id, changes["name"], excluding_id=channel.id)
            channel.name = changes["name"]
        if "settings" in changes:
            channel.settings = merged_settings(channel.type, previous, changes["settings"])
        channel.save()
    return _activated(channel, previous) if "settings" in changes else channel


def replace_settings(workspace_id, channel_id, settings):
    """PUT settings: the body is the new settings, except that a secret left
    out keeps its stored value (it cannot be read back to be sent again);
    a secret given as null is cleared. A connected channel must keep what
    it needs to work (409 CHANNEL_SETTINGS_INCOMPLETE, nothing changed)."""
    with transaction():
        channel = get_channel(workspace_id, channel_id)
        previous = channel.settings
        secrets = adapters.channel_type(channel.type).secret_settings
        kept = {name: value for name, value in previous.items() if name in secrets}
        channel.settings = merged_settings(channel.type, kept, settings)
        _check_still_works(channel, previous)
        channel.save()
    return _activated(channel, previous)


def _check_still_works(channel, previous):
    """Refuse new settings that take from a connected channel one its
    adapter says it needs to carry messages. A PUT replaces every setting,
    so a client that sends one (or a form with empty fields as null) would
    otherwise silence a live channel. One that lacked some already may be
    completed a step at a time, and a disconnected one set up in any order."""
    if channel.agent_id is None:
        return
    lacking = adapters.missing_settings(channel.type, channel.settings)
    if set(lacking) <= set(adapters.missing_settings(channel.type, previous)):
        return
    listed = ", ".join(f"settings.{name}" for name in lacking)
    raise Conflict(
        f"Channel {channel.id} is connected to an agent and would not work without "
        f"{listed}: include them (PUT replaces every setting; a secret left out keeps "
        "its value), or disconnect the channel first.",
        code="CHANNEL_SETTINGS_INCOMPLETE",
    )


def _activated(channel, previous=None):
    """After its settings were stored (they were `previous` before, None on
    creation): the adapter sets up the network's side (outside the
    transaction: it may call the network), and the channel is read again,
    with whatever the adapter recorded."""
    adapters.activated(channel, previous)
    return Channel.get_by_id(channel.id)


def merged_settings(channel_type, current, changes):
    """`current` with `changes` applied (null removes a key), each value
    checked by its type's declaration (channels.adapters)."""
    allowed = adapters.channel_type(channel_type).settings
    result = dict(current)
    for name, value in changes.items():
        field = f"settings.{name}"
        if name not in allowed:
            names = ", ".join(allowed)
            raise ValidationError(field, f"unknown setting for {channel_type}; allowed: {names}")
        if value is None:
            result.pop(name, None)
        else:
            result[name] = allowed[name](value, field)
    adapters.check_settings(channel_type, result)
    return result


def delete_channel(workspace_id, channel_id, now=None):
    """Deactivate: the channel disappears from the API, its history stays.
    A connected channel is disconnected first; messages still waiting to be
    sent through it fail (CHANNEL_DELETED)."""
    now = now or utcnow()
    with transaction():
        channel = get_channel(workspace_id, channel_id)
        if channel.agent_id:
            _disconnect(channel, now)
        channel.is_active = False
        channel.deleted_at = now
        channel.save()
        _fail_queued(channel, now)
    adapters.deactivated(channel)


def _fail_queued(channel, now):
    error = {"code": "CHANNEL_DELETED", "title": "The channel was deleted", "details": None}
    queued = Message.select().where(Message.channel == channel.id, Message.status == "queued")
    for message in queued:
        message.status, message.error, message.failed_at = "failed", error, now
        message.save()
        emit(channel.workspace_id, "message.failed", formats.jsonable(message.as_dict()), now=now)


def connect(workspace_id, channel_id, agent_id, now=None):
    """Connect to `agent_id`. Connecting to the agent it already has changes
    nothing; another agent is 409 CHANNEL_ALREADY_CONNECTED (disconnect first)."""
    with transaction():
        channel = get_channel(workspace_id, channel_id)
        agent = live_agent(workspace_id, str(agent_id))
        unavailable = adapters.unavailable_reason(channel.type)
        if unavailable is not None:
            raise Conflict(unavailable, code="CHANNEL_TYPE_NOT_AVAILABLE")
        if channel.agent_id == agent.id:
            return channel
        if channel.agent_id:
            raise Conflict(
                f"Channel {channel.id} is already connected to agent {channel.agent_id}; "
                "disconnect it first.",
                code="CHANNEL_ALREADY_CONNECTED",
            )
        now = now or utcnow()
        channel.agent, channel.connected_at = agent.id, now
        channel.save()
        emit(workspace_id, "channel.connected", formats.jsonable(channel.as_dict()), now=now)
        return channel


def disconnect(workspace_id, channel_id, now=None):
    """Detach from its agent; a channel not connected is returned unchanged."""
    with transaction():
        channel = get_channel(workspace_id, channel_id)
        if channel.agent_id:
            _disconnect(channel, now or utcnow())
        return channel


def detach_agent(workspace_id, agent_id, now=None):
    """Disconnect every channel of `agent_id` (for the agent's deletion), each
    raising channel.disconnected; joins the caller's transaction."""
    now = now or utcnow()
    with transaction():
        channels = Channel.in_workspace(workspace_id).where(Channel.agent == agent_id)
        for channel in list(channels):
            _disconnect(channel, now)


def _disconnect(channel, now):
    previous = channel.agent_id
    channel.agent, channel.connected_at = None, None
    channel.save()
    data = {**formats.jsonable(channel.as_dict()), "previous_agent_id": previous}
    emit(channel.workspace_id, "channel.disconnected", data, now=now)


def live_agent(workspace_id, agent_id):
    """An agent of the workspace that is not deleted, else 404 AGENT_NOT_FOUND."""
    error = NotFound(f"Agent {agent_id} not found.", code="AGENT_NOT_FOUND")
    agent = Agent.get_in_workspace(workspace_id, agent_id, error)
    if agent.deleted_at is not None:
        raise error
    return agent


def _check_name_free(workspace_id, name, excluding_id=None):
    if Channel.named(workspace_id, name, excluding_id):
        raise Conflict(
            f"A channel named '{name}' already exists in this workspace.",
            code="CHANNEL_NAME_EXISTS",
        )


def public_link(channel, public_url):
    """The link a customer opens to write to the channel (what the QR code holds)."""
    return adapters.channel_type(channel.type).public_link(channel, public_url)


def qrcode(workspace_id, channel_id, public_url, image_format="png", scale=8):
    """(image bytes, MIME type, link) of the channel's public link as a QR code."""
    import segno  # here: 0.8 MB a service that shows no QR code does without

    link = public_link(get_channel(workspace_id, channel_id), public_url)
    code = segno.make(link, error="m", micro=False)
    buffer = io.BytesIO()
    if image_format == "svg":
        code.save(buffer, kind="svg", scale=scale, border=4, xmldecl=True)
        return buffer.getvalue(), "image/svg+xml", link
    code.save(buffer, kind="png", scale=scale, border=4)
    return buffer.getvalue(), "image/png", link


def widget(workspace_id, channel_id, public_url):
    """The embed snippet and public configuration of a website channel."""
    channel = get_channel(workspace_id, channel_id)
    if channel.type != "website":
        raise NotFound(
            f"Channel {channel.id} is a {channel.type} channel; only website channels "
            "have a widget.",
            code="WIDGET_NOT_AVAILABLE",
        )
    base = public_url.rstrip("/")
    script_url = f"{base}/widget/{channel.id}/widget.js"
    settings = channel.settings
    config = {
        "channel_id": channel.id,
        "title": settings.get("title", channel.name),
        "greeting": settings.get("greeting"),
        "colors": {
            "primary": settings.get("primary_color"),
            "background": settings.get("background_color"),
            "text": settings.get("text_color"),
        },
        "allowed_origins": settings.get("allowed_origins", []),
        "position": settings.get("position", "bottom-right"),
        "launcher_text": settings.get("launcher_text"),
        "require_name": settings.get("require_name", False),
        "require_email": settings.get("require_email", False),
        "identity_verification": bool(settings.get("identity_secret")),
    }
    snippet = f'<script src="{script_url}" data-channel-id="{channel.id}" async></script>'
    return {
        "channel_id": channel.id,
        "page_url": public_link(channel, public_url),
        "script_url": script_url,
        "snippet": snippet,
        "config": config,
    }


# -- Credential checks ------------------------------------------------------


def verify(workspace_id, channel_id, now=None):
    """Check the channel's credentials with its network: channel.connected
    (with `verification`) when they work, channel.error (with `error`) when
    not; both are also written to the channel's event log."""
    channel = get_channel(workspace_id, channel_id)
    verifier = adapters.channel_type(channel.type).verify_credentials
    if verifier is None:
        raise NotFound(
            f"Channel {channel.id} is a {channel.type} channel; its credentials cannot be checked.",
            code="VERIFICATION_NOT_AVAILABLE",
        )
    outcome = verifier(channel)
    now = now or utcnow()
    with transaction():
        channel = get_channel(workspace_id, channel_id)
        result = {"channel_id": channel.id, "checked_at": now, **outcome}
        data = formats.jsonable(channel.as_dict())
        if outcome["ok"]:
            data["verification"] = formats.jsonable(result)
            emit(workspace_id, "channel.connected", data, now=now)
        else:
            data["error"] = outcome["error"]
            emit(workspace_id, "channel.error", data, now=now)
        kind = "credentials_verified" if outcome["ok"] else "credentials_failed"
        ChannelEvent.record(channel.id, kind, outcome, is_error=not outcome["ok"], now=now)
        return result


def recent_errors(workspace_id, channel_id, limit=5):
    """The channel's newest error entries of its event log, newest first."""
    channel = get_channel(workspace_id, channel_id)
    return ChannelEvent.newest(channel.id, limit, errors_only=True)


def last_verification(workspace_id, channel_id):
    """The newest successful credential check (its `details`: the bot, the
    servers), or None."""
    channel = get_channel(workspace_id, channel_id)
    found = ChannelEvent.newest(channel.id, 1, kind="credentials_verified")
    return found[0] if found else None


def all_channels(workspace_id, limit=200):
    """The workspace's active channels, oldest first (a page's list)."""
    paging = PageRequest(page=1, limit=limit, order="asc", sort="created_at")
    return list_channels(workspace_id, paging).items


def list_events(workspace_id, channel_id, paging, kind=None):
    """A page of the channel's event log."""
    channel = get_channel(workspace_id, channel_id)
    query = ChannelEvent.of_channel(channel.id)
    if kind:
        query = query.where(ChannelEvent.kind == kind)
    return paginate(query, ChannelEvent, paging)
