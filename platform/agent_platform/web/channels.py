"""The admins' channel pages at /app/channels: list, create and configure
each type, connect an agent, check the credentials, see recent errors.
Each action calls the API's own service function (services/channels.py):
the same checks, messages and events as the REST API."""

import secrets

from flask import current_app, redirect, render_template, request, url_for

from ..errors import ApiError, NotFound
from ..models.pagination import PageRequest
from ..services import agents
from ..services import channels as service
from . import channel_fields, session
from .blueprint import blp
from .forms import SEE_OTHER


def _workspace_id():
    return session.current_user().workspace_id


@blp.route("/channels")
@session.signed_in(role="admin")
def channels_list():
    workspace_id = _workspace_id()
    rows = [
        {"channel": channel, "errors": service.recent_errors(workspace_id, channel.id, 1)}
        for channel in service.all_channels(workspace_id)
    ]
    names = {agent.id: agent.name for agent in _agents(workspace_id)}
    return _render("app/channels/list.html", rows=rows, agent_names=names)


@blp.route("/channels/new/<channel_type>", methods=["GET", "POST"])
@session.signed_in(role="admin")
def channel_new(channel_type):
    _check_type(channel_type)
    if request.method == "GET":
        return _form_page(channel_type)
    form = request.form
    try:
        values = {
            "name": channel_fields.check_name(form.get("name", "").strip()),
            "type": channel_type,
            "settings": channel_fields.settings_from(channel_type, form, creating=True),
        }
        created = service.create_channel(
            _workspace_id(), values, max_channels=current_app.config["PLAN_MAX_CHANNELS"]
        )
    except ApiError as error:
        return _form_page(channel_type, error=error, entered=form)
    if created.type == "whatsapp" and form.get("verify_token"):
        # Meta's dashboard wants it beside the callback URL, which exists only now.
        once = {"verify_token": form["verify_token"].strip()}
        return _channel_page(created.id, done="The channel is created.", shown_once=once)
    return redirect(url_for("web.channel_page", channel_id=created.id), SEE_OTHER)


@blp.route("/channels/<channel_id>", methods=["GET", "POST"])
@session.signed_in(role="admin")
def channel_page(channel_id):
    if request.method == "GET":
        return _channel_page(channel_id)
    channel = service.get_channel(_workspace_id(), channel_id)
    try:
        changes = {
            "name": channel_fields.check_name(request.form.get("name", "").strip()),
            "settings": channel_fields.settings_from(channel.type, request.form, creating=False),
        }
        service.update_channel(_workspace_id(), channel_id, changes)
    except ApiError as error:
        return _channel_page(channel_id, error=error, entered=request.form)
    return _channel_page(channel_id, done="The settings are saved.")


@blp.route("/channels/<channel_id>/connect", methods=["POST"])
@session.signed_in(role="admin")
def channel_connect(channel_id):
    agent_id = request.form.get("agent_id", "")
    return _act(channel_id, "The agent answers on this channel now.",
                service.connect, agent_id)  # fmt: skip


@blp.route("/channels/<channel_id>/disconnect", methods=["POST"])
@session.signed_in(role="admin")
def channel_disconnect(channel_id):
    return _act(channel_id, "No agent answers on this channel now.", service.disconnect)


@blp.route("/channels/<channel_id>/verify", methods=["POST"])
@session.signed_in(role="admin")
def channel_verify(channel_id):
    try:
        result = service.verify(_workspace_id(), channel_id)
    except ApiError as error:
        if isinstance(error, NotFound) and error.code == "CHANNEL_NOT_FOUND":
            raise
        return _channel_page(channel_id, error=error)
    return _channel_page(channel_id, verification=result)


@blp.route("/channels/<channel_id>/delete", methods=["POST"])
@session.signed_in(role="admin")
def channel_delete(channel_id):
    service.delete_channel(_workspace_id(), channel_id)
    return redirect(url_for("web.channels_list"), SEE_OTHER)


def _act(channel_id, done, action, *arguments):
    """One service call; its refusal (not a missing channel) shown on the page."""
    try:
        action(_workspace_id(), channel_id, *arguments)
    except ApiError as error:
        if error.code == "CHANNEL_NOT_FOUND":
            raise
        return _channel_page(channel_id, error=error)
    return _channel_page(channel_id, done=done)


def _check_type(channel_type):
    if channel_type not in channel_fields.TYPES:
        known = ", ".join(channel_fields.TYPES)
        raise NotFound(f"There is no channel type {channel_type}; the types are {known}.")


def _suggested(channel_type):
    """A WhatsApp form comes with a random verify token (Meta's dashboard
    takes any); the only secret a form ever fills in."""
    return {"verify_token": secrets.token_urlsafe(24)} if channel_type == "whatsapp" else {}


def _agents(workspace_id):
    paging = PageRequest(page=1, limit=200, order="asc", sort="created_at")
    return agents.list_agents(workspace_id, paging).items


def _form_page(channel_type, error=None, entered=None):
    return _render(
        "app/channels/new.html",
        status=error.status if error else 200,
        channel_type=channel_type,
        type_label=channel_fields.TYPES[channel_type],
        fields=channel_fields.fields_of(channel_type),
        presets=channel_fields.EMAIL_PRESETS,
        error=error,
        error_field=channel_fields.error_field(error),
        entered=entered or {},
        suggested=_suggested(channel_type),
        settings={},
    )


def _channel_page(
    channel_id, error=None, entered=None, done=None, verification=None, shown_once=None
):
    workspace_id = _workspace_id()
    channel = service.get_channel(workspace_id, channel_id)
    public_url = current_app.config["SERVER_PUBLIC_URL"].rstrip("/")
    return _render(
        "app/channels/channel.html",
        status=error.status if error else 200,
        channel=channel,
        channel_type=channel.type,
        type_label=channel_fields.TYPES[channel.type],
        fields=channel_fields.fields_of(channel.type),
        presets=channel_fields.EMAIL_PRESETS,
        settings=channel.public_settings(),
        error=error,
        error_field=channel_fields.error_field(error),
        entered=entered,
        done=done,
        verification=verification,
        shown_once=shown_once or {},
        suggested={},
        verified=service.last_verification(workspace_id, channel_id),
        errors=service.recent_errors(workspace_id, channel_id, 10),
        agents=_agents(workspace_id),
        callback_url=f"{public_url}/inbound/{channel.type}/{channel.id}",
        widget=service.widget(workspace_id, channel_id, public_url)
        if channel.type == "website"
        else None,
    )


def _render(template, status=200, **values):
    user = session.current_user()
    page = render_template(template, user=user, workspace=user.workspace, **values)
    return page, status
