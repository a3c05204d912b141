"""Delivery of events to webhooks: queue, claim with a lease, send, retry.

`queue_event` (called by `emit`, in the transaction of the event) writes one
pending delivery per subscribed active webhook, with its envelope serialised
once. The `deliver_due` job claims due deliveries in a short transaction
(a lease and a claim token on each row), sends them outside any transaction,
and records the attempts in other short transactions (a lane's successes
several at a time, see _send_group). A process that dies between claim and
record leaves the lease to expire; the delivery is then claimed again, so
every event is delivered at least once.

Order: deliveries of one webhook are sent one at a time, in the order their
events were raised; a webhook whose deliveries are leased (in flight,
anywhere) is not claimed again until they are recorded or the lease expires.
A delivery waiting for its retry does not hold back later events.
Different webhooks are served in parallel, in two lanes of
WEBHOOKS_CONCURRENCY each: webhooks whose last attempt failed (a receiver
down, or hanging until the timeout) in one, the others in the other, so a
failing receiver holds up only failing ones. The job claims new work every
WEBHOOKS_POLL_SECONDS while sends are in flight, never waiting for a slow one.

When: a transaction of this process that queued deliveries wakes the job
once it is committed (`wake_if_queued`, run where live subscribers are
woken: events.flush), so the first attempt leaves within milliseconds; the
job's poll, every WEBHOOKS_POLL_SECONDS, finds what other processes queued
(a `worker`, other servers) and the retries that fall due.
"""

import json
import logging
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import timedelta

from flask import current_app

from .. import scheduler
from ..db import database, transaction
from ..models.base import new_id, utcnow
from ..models.webhooks import Delivery, Webhook
from ..services import alerts
from .attempts import record_attempt, record_successes, render_time, send_signed
from .claims import claim_due, claim_next, release, renew, still_held
from .delivery_settings import current_settings

log = logging.getLogger("agent_platform.webhooks")

TEST_EVENT = "webhook.test"


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
        _queued.flag = True
    return len(rows)


def wake_if_queued():
    """Wake this process's delivery job if this thread queued deliveries:
    call it after the commit (events.flush does)."""
    if getattr(_queued, "flag", False):
        _queued.flag = False
        scheduler.wake(deliver_due)


# Made at import, as events.live's flag: at worst shared by the greenlets of
# one thread, which costs a spare pass.
_queued = threading.local()


# --- the job ------------------------------------------------------------------


@scheduler.job("WEBHOOKS_POLL_SECONDS", in_every_process=True, wakeable=True)
def deliver_due(now=None):
    """Send every due delivery; return the number of attempts made.

    With `now` given (tests), every claim and attempt happens at that time;
    otherwise at the clock's time. Returns when nothing due is left to claim,
    or once the process stops (scheduler.stopping) and its sends in flight end.
    """
    settings = current_settings()
    config = dict(current_app.config)
    attempts, width = 0, settings.concurrency
    with ThreadPoolExecutor(2 * width, thread_name_prefix="webhooks") as pool:
        running = {}  # future -> whether its webhook is in the failing lane
        while True:
            busy = Counter(running.values())
            free, free_failing = width - busy[False], width - busy[True]
            if scheduler.stopping():
                free = free_failing = 0
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
    """Send one webhook's claimed deliveries one by one, in order (in a pool
    thread). Successes are recorded together, up to RECORD_EVERY or after
    RECORD_WITHIN seconds: one transaction's commit was half the cost of
    recording one. While some are unrecorded, a read of the next one's row
    says whether it is still ours (what their records would have told: the
    webhook deactivated, a lease lost) before it is sent. A failure is
    recorded at once, after the successes before it.

    A batch sent whole, the lane claims the webhook's next due deliveries
    itself, for up to a poll: handing back to the job's claim between
    batches left the receiver waiting about 2 ms each time, 8% of a fast
    receiver's rate. After the poll the slot goes back to the claim, which
    picks among every webhook in due order."""
    lane = _Lane(claimed[0], now, settings, config)
    keep_until = time.monotonic() + settings.poll
    try:
        while claimed and lane.send_all(claimed):
            if time.monotonic() >= keep_until or scheduler.stopping():
                break
            claimed = lane.next_batch()
        return lane.sent
    finally:
        lane.end()


class _Lane:
    """One webhook's claimed deliveries being sent, and what is known of them."""

    def __init__(self, first, now, settings, config):
        self.now, self.settings, self.config = now, settings, config
        self.webhook_id, self.failing = first.webhook_id, first.failing
        self.sent, self.answered = 0, _Answered(settings)
        self._start_batch()

    def _start_batch(self):
        self.lease_ends = time.monotonic() + self.settings.lease_seconds
        self.webhook = Webhook.get_or_none(Webhook.id == self.webhook_id)

    def send_all(self, claimed):
        """Send `claimed` in order; whether every one was sent (the rest
        released otherwise)."""
        for index, item in enumerate(claimed):
            if not self.may_send(item, claimed[index:]):
                release(claimed[index:])
                return False
            if not self.send(item):
                release(claimed[index + 1 :])
                return False
        return True

    def next_batch(self):
        """The webhook's next due deliveries, claimed once this batch's
        successes are recorded (its leases ended: in flight no more)."""
        if not self.answered.record():
            return []
        claimed = claim_next(self.webhook_id, self.failing, self.now, self.settings)
        if claimed:
            self._start_batch()
        return claimed

    def may_send(self, item, rest):
        """Whether `item` may be sent now, the lease of `rest` renewed if it
        would not last a send's timeout."""
        webhook, answered = self.webhook, self.answered
        if webhook is None or not webhook.is_active or scheduler.stopping():
            return False
        if answered and not still_held(item):
            return False
        if time.monotonic() + self.settings.timeout + 1 < self.lease_ends:
            return True
        if not answered.record():  # their leases are not renewed
            return False
        self.lease_ends = renew(rest, self.now, self.settings)
        return True

    def send(self, item):
        """Send `item` and settle its attempt; whether to go on with the rest."""
        attempt_time = self.now or utcnow()
        body = item.body.encode()
        outcome = send_signed(self.webhook, item.event_id, body, attempt_time, self.settings)
        self.sent += 1
        if outcome.success and self.answered.add(item, outcome, attempt_time):
            return True  # recorded later, with the next ones
        if not self.answered.record():
            return False  # cancelled, or taken over after the lease expired
        return outcome.success or self._failed(item, outcome, attempt_time)

    def _failed(self, item, outcome, attempt_time):
        alert, owned = record_attempt(item, outcome, attempt_time, self.settings)
        if alert:
            alerts.webhook_failing(self.config, alert)
        if not owned or not item.failing:
            # Cancelled or taken over; or failing now: the rest goes to the
            # failing lane at the next claim, and this lane's slot to a
            # webhook that answers.
            return False
        # The failure policy may have deactivated it.
        self.webhook = Webhook.get_or_none(Webhook.id == item.webhook_id)
        return True

    def end(self):
        try:
            self.answered.record()
        finally:
            database.close()  # this pool thread's connection


RECORD_EVERY = 10
RECORD_WITHIN = 0.25  # seconds


class _Answered:
    """A lane's successes sent and not yet recorded."""

    def __init__(self, settings):
        self.settings, self.items, self.since = settings, [], 0.0

    def __bool__(self):
        return bool(self.items)

    def add(self, item, outcome, attempt_time):
        """Keep a success; whether it may wait for the next ones."""
        if not self.items:
            self.since = time.monotonic()
        self.items.append((item, outcome, attempt_time))
        full = len(self.items) >= RECORD_EVERY
        return not full and time.monotonic() - self.since < RECORD_WITHIN

    def record(self):
        """Record them; whether every one was still ours."""
        items, self.items = self.items, []
        return not items or record_successes(items, self.settings)


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
