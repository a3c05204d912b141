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
Different webhooks are served in parallel, in two lanes of
WEBHOOKS_CONCURRENCY each: webhooks whose last attempt failed (a receiver
down, or hanging until the timeout) in one, the others in the other, so a
failing receiver holds up only failing ones. The job claims new work every
WEBHOOKS_POLL_SECONDS while sends are in flight, never waiting for a slow one.
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

from .. import netguard, scheduler
from ..db import database, transaction
from ..models.base import new_id, utcnow
from ..models.webhooks import Delivery, Webhook
from ..services import alerts
from . import signing

log = logging.getLogger("agent_platform.webhooks")

RESPONSE_BODY_LIMIT = 1024
CANDIDATES = 500
MAX_RETRY_AFTER_SECONDS = 86400
TEST_EVENT = "webhook.test"
POLICIES = ("failing", "deactivate")


# The settings that let the address guard allow a refused webhook URL (also
# used for intentions' URLs, which are called like webhooks).
GUARD_SETTINGS = ("webhooks.allow_private_targets", "webhooks.allowed_ports")


def refused(error):
    """The error of a URL the guard refused, naming the setting that allows it."""
    return f"URL refused: {netguard.refusal(error, *GUARD_SETTINGS)}"


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
    poll: float

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
            poll=config["WEBHOOKS_POLL_SECONDS"],
        )


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
        for webhook in Webhook.subscribed(event.workspace_id, event.name, event.agent_id)
    ]
    if rows:
        Delivery.insert_many(rows).execute()
    return len(rows)


# --- claiming ---------------------------------------------------------------

# Deliveries of one webhook claimed at once (their lease is renewed while they
# are being sent, so a slow receiver never loses it).
CLAIM_BATCH = 50

_IN_FLIGHT = "SELECT webhook_id FROM delivery WHERE lease_until > ? AND status = 'pending'"
# Due, unleased (or lease expired) deliveries of active webhooks not in flight,
# in send order. The (status, next_attempt_at) index holds rowid as its last
# column, so this reads the index in order without sorting.
_CANDIDATES = f"""
SELECT id, webhook_id FROM delivery
WHERE status = 'pending' AND next_attempt_at <= ?
  AND (lease_until IS NULL OR lease_until <= ?)
  AND webhook_id IN (SELECT id FROM webhook WHERE is_active = 1)
  AND webhook_id NOT IN ({_IN_FLIGHT})
ORDER BY next_attempt_at, rowid
LIMIT {CANDIDATES}
"""


@dataclass(frozen=True)
class Claimed:
    """A delivery this process holds the lease of."""

    id: str
    webhook_id: str
    event_id: str
    body: str
    claim_token: str
    failing: bool = False  # its webhook's last attempt failed: sent in the failing lane


def _sql(query, params=()):
    return database.execute_sql(query, params)


def _marks(values):
    return ", ".join("?" for _ in values)


def claim_due(now=None, max_webhooks=None, settings=None, max_failing=None):
    """Lease due deliveries of webhooks not in flight; return them in send order.

    At most CLAIM_BATCH deliveries per webhook, `max_webhooks` webhooks, and
    of those whose last attempt failed at most `max_failing` (None: failing
    webhooks are not told apart). Runs in its own short write transaction
    (BEGIN IMMEDIATE), so two processes claiming at once never get the same row.
    """
    settings = settings or current_settings()
    now = now or utcnow()
    stamp = str(now)
    with transaction():
        failing = set() if max_failing is None else _failing_webhooks()
        limits = {False: max_webhooks, True: max_failing}
        chosen, per_webhook, per_lane = [], Counter(), Counter()
        for delivery_id, webhook_id in _sql(_CANDIDATES, (stamp, stamp, stamp)).fetchall():
            lane = webhook_id in failing
            if per_webhook[webhook_id] >= CLAIM_BATCH:
                continue
            if webhook_id not in per_webhook:
                if per_lane[lane] == limits[lane]:
                    continue
                per_lane[lane] += 1
            per_webhook[webhook_id] += 1
            chosen.append(delivery_id)
        if not chosen:
            return []
        token = new_id()
        lease_until = str(now + timedelta(seconds=settings.lease_seconds))
        _sql(
            f"UPDATE delivery SET lease_until = ?, claim_token = ? WHERE id IN ({_marks(chosen)})",
            (lease_until, token, *chosen),
        )
        rows = _sql(
            f"SELECT id, webhook_id, event_id, body FROM delivery WHERE id IN ({_marks(chosen)}) "
            "ORDER BY next_attempt_at, rowid",
            chosen,
        ).fetchall()
    return [Claimed(*row, claim_token=token, failing=row[1] in failing) for row in rows]


def _failing_webhooks():
    rows = _sql(
        "SELECT id FROM webhook WHERE is_active = 1 AND last_failure_at IS NOT NULL "
        "AND (last_success_at IS NULL OR last_failure_at > last_success_at)"
    )
    return {row[0] for row in rows.fetchall()}


def _renew(claimed, now, settings):
    """Extend the lease of the deliveries still to send; return its monotonic end."""
    lease_until = str((now or utcnow()) + timedelta(seconds=settings.lease_seconds))
    ids = [item.id for item in claimed]
    with transaction():
        _sql(
            f"UPDATE delivery SET lease_until = ? WHERE claim_token = ? AND id IN ({_marks(ids)})",
            (lease_until, claimed[0].claim_token, *ids),
        )
    return time.monotonic() + settings.lease_seconds


def _release(claimed):
    """Give back claimed deliveries that will not be sent now."""
    if not claimed:
        return
    ids = [item.id for item in claimed]
    with transaction():
        _sql(
            "UPDATE delivery SET lease_until = NULL, claim_token = NULL "
            f"WHERE claim_token = ? AND id IN ({_marks(ids)})",
            (claimed[0].claim_token, *ids),
        )


# --- the job ------------------------------------------------------------------


@scheduler.job("WEBHOOKS_POLL_SECONDS")
def deliver_due(now=None):
    """Send every due delivery; return the number of attempts made.

    With `now` given (tests), every claim and attempt happens at that time;
    otherwise at the clock's time. Returns when nothing due is left to claim.
    """
    settings = current_settings()
    config = dict(current_app.config)
    attempts, width = 0, settings.concurrency
    with ThreadPoolExecutor(2 * width, thread_name_prefix="webhooks") as pool:
        running = {}  # future -> whether its webhook is in the failing lane
        while True:
            busy = Counter(running.values())
            free, free_failing = width - busy[False], width - busy[True]
            claimed = claim_due(now, free, settings, free_failing) if free or free_failing else []
            for group in _by_webhook(claimed):
                running[pool.submit(_send_group, group, now, settings, config)] = group[0].failing
            if not running:
                return attempts
            # Back to claiming after a poll at most: a slow send holds up nobody else.
            done, _ = wait(running, timeout=settings.poll, return_when=FIRST_COMPLETED)
            for future in done:
                del running[future]
                attempts += _result(future)


def _by_webhook(claimed):
    groups = {}
    for item in claimed:
        groups.setdefault(item.webhook_id, []).append(item)
    return list(groups.values())


def _result(future):
    try:
        return future.result()
    except Exception:
        log.exception("sending webhook deliveries failed; their lease will expire")
        return 0


def _send_group(claimed, now, settings, config):
    """Send one webhook's claimed deliveries one by one, in order (in a pool thread)."""
    lease_ends = time.monotonic() + settings.lease_seconds
    sent = 0
    try:
        webhook = Webhook.get_or_none(Webhook.id == claimed[0].webhook_id)
        for index, item in enumerate(claimed):
            if webhook is None or not webhook.is_active:
                _release(claimed[index:])
                break
            if time.monotonic() + settings.timeout + 1 >= lease_ends:
                lease_ends = _renew(claimed[index:], now, settings)
            attempt_time = now or utcnow()
            body = item.body.encode()
            outcome = send_signed(webhook, item.event_id, body, attempt_time, settings)
            sent += 1
            alert, owned = record_attempt(item, outcome, attempt_time, settings)
            if alert:
                alerts.webhook_failing(config, alert)
            if not owned:  # cancelled, or taken over after the lease expired
                _release(claimed[index + 1 :])
                break
            if not outcome.success and not item.failing:
                # Failing now: the rest goes to the failing lane at the next claim,
                # and this lane's slot to a webhook that answers.
                _release(claimed[index + 1 :])
                break
            if not outcome.success:  # the failure policy may have deactivated it
                webhook = Webhook.get_or_none(Webhook.id == item.webhook_id)
        return sent
    finally:
        database.close()  # this pool thread's connection


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
        return Outcome(False, None, _ms(started), refused(error))
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
    attempt is still logged. Plain SQL: this runs once per attempt.
    """
    stamp = str(now)
    with transaction():
        row = _sql(
            "SELECT attempt_count, round_start, status, claim_token FROM delivery WHERE id = ?",
            (claimed.id,),
        ).fetchone()
        if row is None:  # the webhook was deleted meanwhile
            return None, False
        count, round_start, status, token = row
        number = count + 1
        _sql(
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
            _sql("UPDATE delivery SET attempt_count = ? WHERE id = ?", (number, claimed.id))
            return None, False
        if outcome.success:
            _sql(_SUCCEEDED, (number, stamp, stamp, claimed.id))
            _sql(_WEBHOOK_SUCCEEDED, (stamp, claimed.webhook_id))
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
