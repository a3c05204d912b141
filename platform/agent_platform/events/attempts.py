"""One attempt at a delivery: sent signed through the address guard, then
recorded; a failure schedules the retry or ends the delivery and applies the
webhook's failure policy."""

import calendar
import logging
import time
from dataclasses import dataclass
from datetime import UTC, timedelta
from email.utils import parsedate_to_datetime

import requests

from .. import netguard
from ..db import database, transaction
from ..models.base import new_id, utcnow
from ..models.webhooks import Delivery, Webhook
from ..nul_text import nul_replaced
from . import signing
from .delivery_settings import current_settings, refused

log = logging.getLogger("agent_platform.webhooks")

RESPONSE_BODY_LIMIT = 1024
MAX_RETRY_AFTER_SECONDS = 86400


@dataclass
class Outcome:
    """What one attempt gave: success, HTTP status, time, error, start of the answer."""

    success: bool
    http_status: int | None
    response_time_ms: int
    error: str | None = None
    response_body: str | None = None
    retry_after: int | None = None


def render_time(value):
    return value.isoformat(timespec="microseconds") + "Z"


def unix_seconds(moment):
    return calendar.timegm(moment.utctimetuple())


def send_signed(webhook, event_id, body, now=None, settings=None):
    """POST `body` to the webhook's URL through the SSRF guard, signed; never raises."""
    settings = settings or current_settings()
    now = now or utcnow()
    headers = {"Content-Type": "application/json"}
    headers.update(
        signing.signature_headers(
            webhook.secrets(now), webhook.id, event_id, unix_seconds(now), body
        )
    )
    started = time.monotonic()
    try:
        response = netguard.safe_request(
            "POST",
            webhook.url,
            allow_private=settings.allow_private,
            allowed_ports=settings.allowed_ports,
            timeout=settings.timeout,
            max_bytes=RESPONSE_BODY_LIMIT,
            headers=headers,
            data=body,
        )
    except netguard.UnsafeURL as error:
        return Outcome(False, None, _ms(started), refused(error))
    except requests.Timeout:
        return Outcome(False, None, _ms(started), f"timeout: no answer in {settings.timeout} s")
    except requests.RequestException as error:
        return Outcome(False, None, _ms(started), f"connection error: {_short(error)}")
    return _outcome(response, _ms(started), now)


def _outcome(response, elapsed_ms, now):
    status = response.status_code
    success = 200 <= status < 300
    return Outcome(
        success=success,
        http_status=status,
        response_time_ms=elapsed_ms,
        error=None if success else nul_replaced(f"HTTP {status} {response.reason or ''}".strip()),
        # The receiver's words, kept as undecodable bytes are: NUL as U+FFFD.
        response_body=nul_replaced(response.content.decode("utf-8", errors="replace")),
        retry_after=_retry_after(response, now) if status in (429, 503) else None,
    )


def _ms(started):
    return int(round((time.monotonic() - started) * 1000))


def _short(error):
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 300 else text[:297] + "..."


def _retry_after(response, now):
    """Retry-After in seconds from `now` (a number, or an HTTP date), capped
    at a day; None if absent or unreadable. Never raises: the receiver writes it."""
    value = (response.headers.get("Retry-After") or "").strip()
    if value.isascii() and value.isdigit():  # "²" is a digit to isdigit, not to int
        digits = value.lstrip("0")[:7] or "0"  # int() refuses 4,301 digits; 7 pass the cap
        return min(int(digits), MAX_RETRY_AFTER_SECONDS)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    seconds = int((moment - now).total_seconds())
    return min(max(seconds, 0), MAX_RETRY_AFTER_SECONDS)


# --- recording ----------------------------------------------------------------

_INSERT_ATTEMPT = (
    "INSERT INTO delivery_attempt (id, delivery_id, number, attempted_at, success, "
    "http_status, response_time_ms, error, response_body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SUCCEEDED = (
    "UPDATE delivery SET status = 'succeeded', attempt_count = ?, next_attempt_at = NULL, "
    "completed_at = ?, lease_until = NULL, claim_token = NULL, updated_at = ? WHERE id = ?"
)
_WEBHOOK_SUCCEEDED = (
    "UPDATE webhook SET consecutive_failures = 0, last_success_at = ?, "
    "status = CASE status WHEN 'failing' THEN 'active' ELSE status END WHERE id = ?"
)


def record_attempt(claimed, outcome, now, settings):
    """Store the attempt and move the delivery on; return (alert or None, still ours).

    Only the holder of the claim moves the delivery: if it lost the claim
    (cancelled, or claimed by another process after the lease expired), the
    attempt is still logged.
    """
    with transaction():
        alert, owned = _record(claimed, outcome, now, settings)
        if owned and outcome.success:
            _mark_answering(claimed.webhook_id, now)
    return alert, owned


def record_successes(answered, settings):
    """record_attempt for each (claimed, outcome, time) of `answered`, all
    successes, in one transaction (its commit was half of one's cost);
    returns whether every one was still ours."""
    with transaction():
        owned = [_record(*success, settings)[1] for success in answered]
        if any(owned):
            last, _, stamp = answered[-1]
            _mark_answering(last.webhook_id, stamp)  # once for them all
    return all(owned)


def _mark_answering(webhook_id, now):
    database.execute_sql(_WEBHOOK_SUCCEEDED, (str(now), webhook_id))


def _record(claimed, outcome, now, settings):
    """The attempt stored and the delivery moved on, in the caller's
    transaction: (alert or None, still ours). Plain SQL: this runs once per
    attempt."""
    stamp = str(now)
    row = database.execute_sql(
        "SELECT attempt_count, round_start, status, claim_token FROM delivery WHERE id = ?",
        (claimed.id,),
    ).fetchone()
    if row is None:  # the webhook was deleted meanwhile
        return None, False
    count, round_start, status, token = row
    number = count + 1
    database.execute_sql(
        _INSERT_ATTEMPT,
        (
            new_id(),
            claimed.id,
            number,
            stamp,
            outcome.success,
            outcome.http_status,
            outcome.response_time_ms,
            outcome.error,
            outcome.response_body,
        ),
    )
    if token != claimed.claim_token or status != "pending":
        database.execute_sql(
            "UPDATE delivery SET attempt_count = ? WHERE id = ?", (number, claimed.id)
        )
        return None, False
    if outcome.success:
        database.execute_sql(_SUCCEEDED, (number, stamp, stamp, claimed.id))
        return None, True
    return _failed(claimed, number - round_start, number, outcome, now, settings), True


def _failed(claimed, failures, number, outcome, now, settings):
    """Schedule the next retry, or end the delivery and apply the failure policy."""
    reason = outcome.error or f"HTTP {outcome.http_status}"
    log.log(
        logging.ERROR if failures > len(settings.schedule) else logging.WARNING,
        "webhook %s delivery %s (event %s) attempt %s failed: %s",
        claimed.webhook_id,
        claimed.id,
        claimed.event_id,
        number,
        reason,
        extra={
            "workspace_id": _workspace_of(claimed.webhook_id),
            "webhook_id": claimed.webhook_id,
            "delivery_id": claimed.id,
            "event_id": claimed.event_id,
            "attempt": number,
            "http_status": outcome.http_status,
            "reason": reason,
        },
    )
    Webhook.update(last_failure_at=now).where(Webhook.id == claimed.webhook_id).execute()
    changes = {
        "attempt_count": number,
        "lease_until": None,
        "claim_token": None,
        "updated_at": now,
    }
    if failures <= len(settings.schedule):
        delay = settings.schedule[failures - 1]
        if outcome.retry_after is not None:
            delay = max(delay, outcome.retry_after)
        next_attempt_at = now + timedelta(seconds=delay)
        Delivery.update(next_attempt_at=next_attempt_at, **changes).where(
            Delivery.id == claimed.id
        ).execute()
        return None
    Delivery.update(status="failed", next_attempt_at=None, completed_at=now, **changes).where(
        Delivery.id == claimed.id
    ).execute()
    return apply_failure_policy(claimed.webhook_id, now, settings)


def _workspace_of(webhook_id):
    return Webhook.select(Webhook.workspace).where(Webhook.id == webhook_id).scalar()


def apply_failure_policy(webhook_id, now, settings):
    """A delivery of the webhook has failed for good: count it, then act on the policy.

    Returns the alert to send (a dict) when the webhook has just turned failing.
    """
    webhook = Webhook.get_by_id(webhook_id)
    webhook.consecutive_failures += 1
    alert = None
    if settings.policy == "deactivate":
        if webhook.is_active and webhook.consecutive_failures >= settings.deactivate_after:
            deactivate(webhook, now)
    elif webhook.status == "active":
        webhook.status = "failing"
        alert = {
            "webhook_id": webhook.id,
            "workspace_id": webhook.workspace_id,
            "url": webhook.url,
            "description": webhook.description,
            "consecutive_failures": webhook.consecutive_failures,
            "at": render_time(now),
        }
    webhook.save()
    return alert


def deactivate(webhook, now):
    """Stop delivering: inactive, status deactivated; pending deliveries end failed
    (`recover` can send them again). The caller saves the webhook."""
    webhook.is_active = False
    webhook.status = "deactivated"
    Delivery.update(
        status="failed",
        completed_at=now,
        next_attempt_at=None,
        lease_until=None,
        claim_token=None,
        updated_at=now,
    ).where(Delivery.webhook == webhook.id, Delivery.status == "pending").execute()
