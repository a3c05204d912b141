"""Delivery of events to webhooks: queue, claim with a lease, send, retry.

`queue_event` (called by `emit`, in the transaction of the event) writes one
pending delivery per subscribed active webhook, with its envelope serialised
once. The `deliver_due` job claims due deliveries in a short transaction
(a lease and a claim token on each row), sends them outside any transaction,
and records each attempt in another short transaction. A process that dies
between claim and record leaves the lease to expire; the delivery is then
claimed again, so every event is delivered at least once.

Order: deliveries of one webhook are sent one at a time, in the order their
events were raised; a webhook whose deliveries are leased (in flight,
anywhere) is not claimed again until they are recorded or the lease expires.
A delivery waiting for its retry does not hold back later events.
Different webhooks are served in parallel (WEBHOOKS_CONCURRENCY).
"""

import calendar
import json
import logging
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

import requests
from flask import current_app
from peewee import SQL, Case

from .. import netguard, scheduler
from ..db import database, transaction
from ..models.base import new_id, utcnow
from ..models.webhooks import Delivery, DeliveryAttempt, Webhook
from ..services import alerts
from . import signing

log = logging.getLogger("agent_platform.webhooks")

RESPONSE_BODY_LIMIT = 1024
CANDIDATES = 500
MAX_RETRY_AFTER_SECONDS = 86400
TEST_EVENT = "webhook.test"
POLICIES = ("failing", "deactivate")


@dataclass(frozen=True)
class Settings:
    timeout: float
    schedule: tuple
    policy: str
    deactivate_after: int
    allow_private: bool
    allowed_ports: tuple
    lease_seconds: int
    concurrency: int

    @classmethod
    def from_config(cls, config):
        policy = config["WEBHOOKS_FAILURE_POLICY"]
        if policy not in POLICIES:
            raise ValueError(f"WEBHOOKS_FAILURE_POLICY must be one of {', '.join(POLICIES)}")
        return cls(
            timeout=config["WEBHOOKS_TIMEOUT_SECONDS"],
            schedule=tuple(config["WEBHOOKS_RETRY_SCHEDULE"]),
            policy=policy,
            deactivate_after=config["WEBHOOKS_DEACTIVATE_AFTER"],
            allow_private=config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"],
            allowed_ports=tuple(config["WEBHOOKS_ALLOWED_PORTS"]),
            lease_seconds=config["WEBHOOKS_LEASE_SECONDS"],
            concurrency=max(1, config["WEBHOOKS_CONCURRENCY"]),
        )

    @property
    def per_claim(self):
        """Deliveries of one webhook claimed at once: all must be sendable,
        one after the other, before their lease runs out."""
        return max(1, int(self.lease_seconds // max(self.timeout, 0.1)) - 1)


def current_settings():
    return Settings.from_config(current_app.config)


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


def envelope(event_name, event_id, occurred_at, webhook_id, data):
    """The delivery body: serialised once, every attempt sends these bytes."""
    body = {
        "event": event_name,
        "timestamp": render_time(occurred_at),
        "webhook_id": webhook_id,
        "data": data,
        "event_id": event_id,
    }
    return json.dumps(body, separators=(",", ":")).encode("ascii")


def queue_event(event):
    """One pending delivery per subscribed active webhook, in the caller's transaction."""
    rows = [
        {
            "id": new_id(),
            "webhook": webhook.id,
            "event_id": event.id,
            "event": event.name,
            "body": envelope(event.name, event.id, event.created_at, webhook.id, event.data).decode(
                "ascii"
            ),
            "status": "pending",
            "attempt_count": 0,
            "round_start": 0,
            "next_attempt_at": event.created_at,
            "created_at": event.created_at,
            "updated_at": event.created_at,
        }
        for webhook in Webhook.subscribed(event.workspace_id, event.name)
    ]
    if rows:
        Delivery.insert_many(rows).execute()
    return len(rows)


# --- claiming ---------------------------------------------------------------


def claim_due(now=None, max_webhooks=None, settings=None):
    """Lease due deliveries of webhooks not in flight; return them in send order.

    At most `settings.per_claim` deliveries per webhook and `max_webhooks`
    webhooks. Runs in its own short write transaction, so two processes
    claiming at once never get the same row.
    """
    settings = settings or current_settings()
    now = now or utcnow()
    with transaction():
        in_flight = _webhooks_in_flight(now)
        chosen, per_webhook = [], Counter()
        for delivery_id, webhook_id in _candidates(now):
            if webhook_id in in_flight or per_webhook[webhook_id] >= settings.per_claim:
                continue
            if webhook_id not in per_webhook and len(per_webhook) == max_webhooks:
                continue
            per_webhook[webhook_id] += 1
            chosen.append(delivery_id)
        if not chosen:
            return []
        token = new_id()
        lease_until = now + timedelta(seconds=settings.lease_seconds)
        Delivery.update(lease_until=lease_until, claim_token=token).where(
            Delivery.id.in_(chosen)
        ).execute()
        return list(Delivery.select().where(Delivery.id.in_(chosen)).order_by(*_SEND_ORDER))


_SEND_ORDER = (Delivery.next_attempt_at, SQL("rowid"))


def _webhooks_in_flight(now):
    query = (
        Delivery.select(Delivery.webhook)
        .where(Delivery.lease_until > now, Delivery.status == "pending")
        .distinct()
    )
    return {row[0] for row in query.tuples()}


def _candidates(now):
    active = Webhook.select(Webhook.id).where(Webhook.is_active == True)  # noqa: E712
    query = (
        Delivery.select(Delivery.id, Delivery.webhook)
        .where(
            Delivery.status == "pending",
            Delivery.next_attempt_at <= now,
            Delivery.lease_until.is_null() | (Delivery.lease_until <= now),
            Delivery.webhook.in_(active),
        )
        .order_by(*_SEND_ORDER)
        .limit(CANDIDATES)
    )
    return list(query.tuples())


# --- the job ------------------------------------------------------------------


@scheduler.job("WEBHOOKS_POLL_SECONDS")
def deliver_due(now=None):
    """Send every due delivery; return the number of attempts made.

    With `now` given (tests), every claim and attempt happens at that time;
    otherwise at the clock's time. Returns when nothing due is left to claim.
    """
    settings = current_settings()
    config = dict(current_app.config)
    attempts = 0
    with ThreadPoolExecutor(settings.concurrency, thread_name_prefix="webhooks") as pool:
        running = set()
        while True:
            free = settings.concurrency - len(running)
            claimed = claim_due(now, max_webhooks=free, settings=settings) if free else []
            for group in _by_webhook(claimed):
                running.add(pool.submit(_send_group, group, now, settings, config))
            if not running:
                return attempts
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                attempts += _result(future)


def _by_webhook(deliveries):
    groups = {}
    for delivery in deliveries:
        groups.setdefault(delivery.webhook_id, []).append(delivery)
    return list(groups.values())


def _result(future):
    try:
        return future.result()
    except Exception:
        log.exception("sending webhook deliveries failed; their lease will expire")
        return 0


def _send_group(deliveries, now, settings, config):
    """Send one webhook's claimed deliveries in order (in a pool thread)."""
    started = time.monotonic()
    sent = 0
    try:
        webhook = Webhook.get_or_none(Webhook.id == deliveries[0].webhook_id)
        for index, delivery in enumerate(deliveries):
            elapsed = time.monotonic() - started
            if webhook is None or elapsed + settings.timeout >= settings.lease_seconds:
                _release(deliveries[index:])
                break
            attempt_time = now or utcnow()
            body = delivery.body.encode()
            outcome = send_signed(webhook, delivery.event_id, body, attempt_time, settings)
            sent += 1
            alert, webhook = record_attempt(delivery, outcome, attempt_time, settings)
            if alert:
                alerts.webhook_failing(config, alert)
            if webhook is None or not webhook.is_active:
                _release(deliveries[index + 1 :])
                break
        return sent
    finally:
        database.close()  # this pool thread's connection


def _release(deliveries):
    """Give back claimed deliveries that will not be sent now."""
    for delivery in deliveries:
        with transaction():
            Delivery.update(lease_until=None, claim_token=None).where(
                Delivery.id == delivery.id, Delivery.claim_token == delivery.claim_token
            ).execute()


# --- sending ------------------------------------------------------------------


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
        return Outcome(False, None, _ms(started), f"URL refused: {error}")
    except requests.Timeout:
        return Outcome(False, None, _ms(started), f"timeout: no answer in {settings.timeout} s")
    except requests.RequestException as error:
        return Outcome(False, None, _ms(started), f"connection error: {_short(error)}")
    return _outcome(response, _ms(started))


def _outcome(response, elapsed_ms):
    status = response.status_code
    success = 200 <= status < 300
    return Outcome(
        success=success,
        http_status=status,
        response_time_ms=elapsed_ms,
        error=None if success else f"HTTP {status} {response.reason or ''}".strip(),
        response_body=response.content.decode("utf-8", errors="replace"),
        retry_after=_retry_after(response) if status in (429, 503) else None,
    )


def _ms(started):
    return int(round((time.monotonic() - started) * 1000))


def _short(error):
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 300 else text[:297] + "..."


def _retry_after(response):
    """Retry-After in seconds (a number or an HTTP date), capped; None if absent or bad."""
    value = (response.headers.get("Retry-After") or "").strip()
    if value.isdigit():
        return min(int(value), MAX_RETRY_AFTER_SECONDS)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = int((moment - datetime.now(UTC)).total_seconds())
    return min(max(seconds, 0), MAX_RETRY_AFTER_SECONDS)


# --- recording ----------------------------------------------------------------


def record_attempt(delivery, outcome, now, settings):
    """Store the attempt and move the delivery on; returns (alert or None, webhook).

    Only the holder of the claim moves the delivery: if its lease was lost
    (another process claimed it after expiry), the attempt is still logged.
    """
    with transaction():
        current = Delivery.get_or_none(Delivery.id == delivery.id)
        if current is None:  # the webhook was deleted meanwhile
            return None, None
        number = current.attempt_count + 1
        DeliveryAttempt.create(
            delivery=current.id,
            number=number,
            attempted_at=now,
            success=outcome.success,
            http_status=outcome.http_status,
            response_time_ms=outcome.response_time_ms,
            error=outcome.error,
            response_body=outcome.response_body,
        )
        current.attempt_count = number
        alert = None
        if current.claim_token != delivery.claim_token or current.status != "pending":
            current.save(only=[Delivery.attempt_count, Delivery.updated_at])
        elif outcome.success:
            _succeeded(current, now)
        else:
            alert = _failed(current, outcome, now, settings)
        return alert, Webhook.get_or_none(Webhook.id == current.webhook_id)


def _finish(delivery, status, now, next_attempt_at=None):
    delivery.status = status
    delivery.next_attempt_at = next_attempt_at
    delivery.completed_at = None if status == "pending" else now
    delivery.lease_until = None
    delivery.claim_token = None
    delivery.save()


def _succeeded(delivery, now):
    _finish(delivery, "succeeded", now)
    Webhook.update(
        consecutive_failures=0,
        last_success_at=now,
        status=Case(Webhook.status, [("failing", "active")], Webhook.status),
    ).where(Webhook.id == delivery.webhook_id).execute()


def _failed(delivery, outcome, now, settings):
    """Schedule the next retry, or end the delivery and apply the failure policy."""
    failures = delivery.attempt_count - delivery.round_start
    Webhook.update(last_failure_at=now).where(Webhook.id == delivery.webhook_id).execute()
    if failures <= len(settings.schedule):
        delay = settings.schedule[failures - 1]
        if outcome.retry_after is not None:
            delay = max(delay, outcome.retry_after)
        _finish(delivery, "pending", now, next_attempt_at=now + timedelta(seconds=delay))
        return None
    _finish(delivery, "failed", now)
    return apply_failure_policy(delivery.webhook_id, now, settings)


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


# --- retention ----------------------------------------------------------------


@scheduler.job("WEBHOOKS_PRUNE_SECONDS")
def prune_deliveries(now=None):
    """Delete finished deliveries (and their attempts) older than the retention."""
    days = current_app.config["WEBHOOKS_RETENTION_DAYS"]
    cutoff = (now or utcnow()) - timedelta(days=days)
    deleted = 0
    while True:
        with transaction():
            batch = (
                Delivery.select(Delivery.id)
                .where(Delivery.status != "pending", Delivery.created_at < cutoff)
                .limit(1000)
            )
            count = Delivery.delete().where(Delivery.id.in_(batch)).execute()
        deleted += count
        if count < 1000:
            return deleted
