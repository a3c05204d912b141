"""Webhooks: registration, secrets, the SSRF guard, the delivery log, test and redelivery.

Delivery itself (queueing with each event, the job, retries, the failure
policy) lives in events/delivery.py (claims.py, attempts.py); importing it here
registers its jobs.
"""

from datetime import timedelta

from flask import current_app

from .. import netguard
from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..events import attempts, delivery_settings, signing
from ..events import delivery as sender
from ..events.catalog import CATEGORIES, EVENTS
from ..models.base import canonical_uuid, new_id, utcnow
from ..models.pagination import paginate
from ..models.webhooks import EVERYTHING, Delivery, DeliveryAttempt, Webhook
from . import agents

# A rotated-out secret keeps signing (next to the new one) this long.
PREVIOUS_SECRET_GRACE = timedelta(hours=24)
TEST_MESSAGE = "This is a test event from Agent Platform; your webhook endpoint is reachable."


def not_found(webhook_id):
    return NotFound(f"Webhook {webhook_id} not found.", code="WEBHOOK_NOT_FOUND")


def delivery_not_found(delivery_id):
    return NotFound(f"Delivery {delivery_id} not found.", code="DELIVERY_NOT_FOUND")


def get_webhook(workspace_id, webhook_id):
    return Webhook.get_in_workspace(workspace_id, webhook_id, not_found(webhook_id))


def list_webhooks(workspace_id, paging, status=None, is_active=None, agent_id=None):
    listing = Webhook.listed(workspace_id, status, is_active, _agent(workspace_id, agent_id))
    return paginate(listing, Webhook, paging)


def create_webhook(workspace_id, values):
    """A new webhook; its secret is in the returned object (shown only now).
    With `agent_id`, it gets only the events of that agent."""
    events = check_events(values["events"])
    check_target(values["url"])
    with transaction():
        agent_id = _agent(workspace_id, values.get("agent_id"))
        _check_url_free(workspace_id, values["url"])
        active = values.get("is_active", True)
        return Webhook.create(
            workspace=workspace_id,
            agent=agent_id,
            url=values["url"],
            events=events,
            description=values.get("description", ""),
            is_active=active,
            status="active" if active else "deactivated",
            secret=signing.new_secret(),
        )


def _agent(workspace_id, agent_id):
    """A live agent's id (404 AGENT_NOT_FOUND otherwise), or None."""
    return None if agent_id is None else agents.live_agent_id(workspace_id, str(agent_id))


def update_webhook(workspace_id, webhook_id, changes, now=None):
    now = now or utcnow()
    if "events" in changes:
        changes["events"] = check_events(changes["events"])
    if "url" in changes:
        check_target(changes["url"])
    with transaction():
        webhook = get_webhook(workspace_id, webhook_id)
        if "url" in changes:
            _check_url_free(workspace_id, changes["url"], excluding_id=webhook.id)
        active = changes.pop("is_active", None)
        for name, value in changes.items():
            setattr(webhook, name, value)
        if active is True and not webhook.is_active:
            webhook.is_active, webhook.status, webhook.consecutive_failures = True, "active", 0
        elif active is False and webhook.is_active:
            attempts.deactivate(webhook, now)
        webhook.save()
        return webhook


def delete_webhook(workspace_id, webhook_id):
    """Delete the webhook with its deliveries and their attempts."""
    with transaction():
        get_webhook(workspace_id, webhook_id).delete_instance()


def rotate_secret(workspace_id, webhook_id, now=None):
    """A new secret; the old one keeps signing for 24 hours next to it."""
    now = now or utcnow()
    with transaction():
        webhook = get_webhook(workspace_id, webhook_id)
        webhook.previous_secret = webhook.secret
        webhook.previous_secret_expires_at = now + PREVIOUS_SECRET_GRACE
        webhook.secret = signing.new_secret()
        webhook.save()
        return webhook


def test_webhook(workspace_id, webhook_id, now=None):
    """Send a signed webhook.test event now and report the outcome.

    It is not stored as a delivery and does not touch the failure counters.
    """
    webhook = get_webhook(workspace_id, webhook_id)
    now = now or utcnow()
    event_id = new_id()
    data = {"message": TEST_MESSAGE}
    body = sender.envelope(sender.TEST_EVENT, event_id, now, webhook.id, data)
    outcome = attempts.send_signed(webhook, event_id, body, now)
    return {
        "success": outcome.success,
        "http_status": outcome.http_status,
        "response_time_ms": outcome.response_time_ms,
        "error": outcome.error,
        "response_body": outcome.response_body,
        "event_id": event_id,
    }


def list_deliveries(workspace_id, webhook_id, paging, status=None, event=None):
    webhook = get_webhook(workspace_id, webhook_id)
    page = paginate(Delivery.of_webhook(webhook.id, status, event), Delivery, paging)
    _attach_attempts(page.items)
    return page


def get_delivery(workspace_id, webhook_id, delivery_id):
    webhook = get_webhook(workspace_id, webhook_id)
    delivery_key = canonical_uuid(delivery_id)
    delivery = None
    if delivery_key is not None:
        delivery = Delivery.of_webhook(webhook.id).where(Delivery.id == delivery_key).first()
    if delivery is None:
        raise delivery_not_found(delivery_id)
    _attach_attempts([delivery])
    return delivery


def redeliver(workspace_id, webhook_id, delivery_id, now=None):
    """Schedule the delivery again now; a finished one starts a new round of retries."""
    now = now or utcnow()
    with transaction():
        delivery = get_delivery(workspace_id, webhook_id, delivery_id)
        _schedule_again(delivery, now)
        return delivery


def recover(workspace_id, webhook_id, since, now=None):
    """Schedule again every failed delivery of the webhook created at or after `since`."""
    now = now or utcnow()
    with transaction():
        webhook = get_webhook(workspace_id, webhook_id)
        failed = Delivery.of_webhook(webhook.id, status="failed").where(
            Delivery.created_at >= since
        )
        count = 0
        for delivery in failed:
            _schedule_again(delivery, now)
            count += 1
        return {"redelivered": count, "since": since}


def _schedule_again(delivery, now):
    if delivery.status != "pending":
        delivery.round_start = delivery.attempt_count
        delivery.completed_at = None
    delivery.status = "pending"
    delivery.next_attempt_at = now
    delivery.save()


def _attach_attempts(deliveries):
    attempts = DeliveryAttempt.of_deliveries([delivery.id for delivery in deliveries])
    for delivery in deliveries:
        delivery.attempt_list = attempts[delivery.id]


def check_events(events):
    """The subscription list, deduplicated; unknown names are a 400 naming them."""
    unknown = [name for name in events if not _known(name)]
    if unknown:
        raise ValidationError(
            "events",
            f"unknown event or category names: {', '.join(unknown)} "
            f"(use event names such as message.received, categories such as "
            f"{', '.join(CATEGORIES)}, or {EVERYTHING})",
        )
    return list(dict.fromkeys(events))


def _known(name):
    return name == EVERYTHING or name in EVENTS or name in CATEGORIES


def check_target(url):
    """Refuse URLs the SSRF guard refuses (400 naming the url field)."""
    config = current_app.config
    try:
        netguard.check_url(
            url,
            allow_private=config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"],
            allowed_ports=tuple(config["WEBHOOKS_ALLOWED_PORTS"]),
        )
    except netguard.UnsafeURL as error:
        reason = netguard.refusal(error, *delivery_settings.GUARD_SETTINGS)
        raise ValidationError("url", f"refused: {reason}") from None


def _check_url_free(workspace_id, url, excluding_id=None):
    if Webhook.with_url(workspace_id, url, excluding_id):
        raise Conflict(
            f"A webhook with the URL {url} is already registered in this workspace.",
            code="DUPLICATE_WEBHOOK_URL",
        )
