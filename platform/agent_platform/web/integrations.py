"""The admins' pages of webhooks (/app/webhooks) and API keys (/app/keys):
each action calls the API's own service function (services/webhooks.py,
services/keys.py), so the checks, messages and events are the API's.

A webhook's signing secret and a new API key are shown once, on the page
that answers their creation, and never again (only their prefix is kept
in sight)."""

from flask import redirect, render_template, request, url_for

from .. import formats
from ..errors import ApiError, ValidationError
from ..events.catalog import CATEGORIES
from ..models.pagination import PageRequest
from ..models.webhooks import EVERYTHING
from ..scopes import SCOPES
from ..services import keys, webhooks
from . import forms, session
from .blueprint import blp

# The pages show the newest of each; the API pages through the rest.
WEBHOOKS_SHOWN = 100
DELIVERIES_SHOWN = 50
URL_MAX_CHARS = 2048
DESCRIPTION_MAX_CHARS = 1000


def _newest(limit):
    return PageRequest(page=1, limit=limit, order="desc", sort="created_at")


def _workspace_id():
    return session.current_user().workspace_id


# --- Webhooks ---------------------------------------------------------------


@blp.route("/webhooks")
@session.signed_in(role="admin")
def webhooks_page():
    return _webhooks_page()


@blp.route("/webhooks", methods=["POST"])
@session.signed_in(role="admin")
def create_webhook():
    values = _webhook_form(request.form)
    try:
        _check_webhook_form(values)
        created = webhooks.create_webhook(_workspace_id(), values)
    except ApiError as error:
        return _webhooks_page(error=error.message, status=error.status, entered=values)
    return _webhook_page(created, secret=created.secret, status=201)


def _webhook_form(form):
    return {
        "url": form.get("url", "").strip(),
        "events": form.getlist("events"),
        "description": form.get("description", "").strip(),
    }


def _check_webhook_form(values):
    """What the API's schema checks before the service does."""
    if not 1 <= len(values["url"]) <= URL_MAX_CHARS:
        raise ValidationError("url", f"must be 1 to {URL_MAX_CHARS} characters")
    if not values["events"]:
        raise ValidationError("events", "choose at least one event or category")
    if len(values["description"]) > DESCRIPTION_MAX_CHARS:
        raise ValidationError("description", f"must be at most {DESCRIPTION_MAX_CHARS} characters")


@blp.route("/webhooks/<webhook_id>")
@session.signed_in(role="admin")
def webhook_page(webhook_id):
    return _webhook_page(webhooks.get_webhook(_workspace_id(), webhook_id))


@blp.route("/webhooks/<webhook_id>/test", methods=["POST"])
@session.signed_in(role="admin")
def test_webhook(webhook_id):
    outcome = webhooks.test_webhook(_workspace_id(), webhook_id)
    return _webhook_page(webhooks.get_webhook(_workspace_id(), webhook_id), test=outcome)


@blp.route("/webhooks/<webhook_id>/deliveries/<delivery_id>/redeliver", methods=["POST"])
@session.signed_in(role="admin")
def redeliver(webhook_id, delivery_id):
    delivery = webhooks.redeliver(_workspace_id(), webhook_id, delivery_id)
    notice = f"Delivery of {delivery.event} ({delivery.event_id}) is scheduled again, now."
    return _webhook_page(webhooks.get_webhook(_workspace_id(), webhook_id), notice=notice)


@blp.route("/webhooks/<webhook_id>/active", methods=["POST"])
@session.signed_in(role="admin")
def set_webhook_active(webhook_id):
    """`active` = "true" (reactivate) or "false" (disable)."""
    active = request.form.get("active")
    if active not in ("true", "false"):
        raise ValidationError("active", 'must be "true" or "false"')
    webhooks.update_webhook(_workspace_id(), webhook_id, {"is_active": active == "true"})
    return redirect(url_for("web.webhook_page", webhook_id=webhook_id), forms.SEE_OTHER)


@blp.route("/webhooks/<webhook_id>/delete", methods=["POST"])
@session.signed_in(role="admin")
def delete_webhook(webhook_id):
    webhooks.delete_webhook(_workspace_id(), webhook_id)
    return redirect(url_for("web.webhooks_page"), forms.SEE_OTHER)


def _webhooks_page(error=None, status=200, entered=None):
    listed = webhooks.list_webhooks(_workspace_id(), _newest(WEBHOOKS_SHOWN))
    page = render_template(
        "app/integrations/webhooks.html",
        **_layout(),
        listed=listed.items,
        total=listed.total,
        categories=CATEGORIES,
        everything=EVERYTHING,
        error=error,
        entered=entered or {"events": []},
    )
    return page, status


def _webhook_page(webhook, secret=None, test=None, notice=None, status=200):
    deliveries = webhooks.list_deliveries(_workspace_id(), webhook.id, _newest(DELIVERIES_SHOWN))
    page = render_template(
        "app/integrations/webhook.html",
        **_layout(),
        webhook=webhook,
        deliveries=deliveries.items,
        total=deliveries.total,
        secret=secret,
        test=test,
        notice=notice,
    )
    return page, status


# --- API keys ---------------------------------------------------------------


@blp.route("/keys")
@session.signed_in(role="admin")
def keys_page():
    return _keys_page()


@blp.route("/keys", methods=["POST"])
@session.signed_in(role="admin")
def create_key():
    form = request.form
    values = {"name": form.get("name", "").strip(), "scopes": form.getlist("scopes")}
    try:
        _check_name(values["name"])
        key, raw_key = keys.create_key(_workspace_id(), values["name"], values["scopes"])
    except ApiError as error:
        return _keys_page(error=error.message, status=error.status, entered=values)
    return _keys_page(created={"name": key.name, "key": raw_key}, status=201)


def _check_name(name):
    """What the API's schema checks of a key's name."""
    problem = formats.name_problem(name)
    if problem is None and not 1 <= len(name) <= 200:
        problem = "Must be 1 to 200 characters."
    if problem:
        raise ValidationError("name", problem)


@blp.route("/keys/<key_id>/revoke", methods=["POST"])
@session.signed_in(role="admin")
def revoke_key(key_id):
    key, minted = keys.revoke_workspace_key(_workspace_id(), key_id)
    notice = f"The key {key.name} is revoked"
    notice += f", with {minted} key(s) minted from it." if minted else "."
    return _keys_page(notice=notice)


def _keys_page(error=None, status=200, entered=None, created=None, notice=None):
    listed = keys.list_keys(_workspace_id())
    page = render_template(
        "app/integrations/keys.html",
        **_layout(),
        listed=list(reversed(listed)),
        names={key.id: key.name for key in listed},
        prefix=keys.KEY_PREFIX,
        scope_groups=_scope_groups(),
        error=error,
        entered=entered or {"scopes": []},
        created=created,
        notice=notice,
    )
    return page, status


def _scope_groups():
    """{"agents": [("agents:read", "Read agents, ..."), ...], ...}, as scopes.py lists them."""
    groups = {}
    for scope, grants in SCOPES.items():
        groups.setdefault(scope.split(":")[0], []).append((scope, grants))
    return groups


def _layout():
    user = session.current_user()
    return {"user": user, "workspace": user.workspace}
