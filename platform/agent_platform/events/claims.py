"""Claiming due deliveries with a lease, renewing and releasing it.

A claim runs in its own short write transaction (BEGIN IMMEDIATE), so two
processes claiming at once never get the same row; a process that dies
holding a lease leaves it to expire, and the delivery is claimed again.
"""

import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from ..db import claiming, database, is_postgresql, transaction
from ..models.base import new_id, utcnow
from .delivery_settings import current_settings

CANDIDATES = 500

# Deliveries of one webhook claimed at once (their lease is renewed while they
# are being sent, so a slow receiver never loses it).
CLAIM_BATCH = 50

# Webhooks with deliveries in flight, read through the lease_until index (few
# rows are leased): SQLite chose the status index, which holds every pending
# row, and read the whole backlog at each claim; `status || ''` is not in an
# index, so the planner leaves it to the rows the leases found.
_IN_FLIGHT = "SELECT webhook_id FROM delivery WHERE lease_until > ? AND status || '' = 'pending'"
# Due, unleased (or lease expired) deliveries of active webhooks not in flight,
# in send order. SQLite's (status, next_attempt_at) index holds rowid as its
# last column, so this reads the index in order without sorting; PostgreSQL's
# rows have no rowid, and their ids are as time-ordered (models.base.new_id).
_CANDIDATES = f"""
SELECT id, webhook_id FROM delivery
WHERE status = 'pending' AND next_attempt_at <= ?
  AND (lease_until IS NULL OR lease_until <= ?)
  AND webhook_id IN (SELECT id FROM webhook WHERE is_active = 1)
  AND webhook_id NOT IN ({_IN_FLIGHT})
ORDER BY next_attempt_at, {{order}}
LIMIT {CANDIDATES}
"""


# One webhook's due deliveries, unleased, while none of its others is in
# flight (a lease of another process: this one's are recorded by then) and
# it is active; read in send order from its own index (migration 0028).
# In flight is asked as the claim does, through the few leased rows: asked
# of the webhook's own rows, it read its whole backlog.
_NEXT = f"""
SELECT id FROM delivery
WHERE webhook_id = ? AND status = 'pending' AND next_attempt_at <= ?
  AND (lease_until IS NULL OR lease_until <= ?)
  AND ? NOT IN ({_IN_FLIGHT})
  AND EXISTS (SELECT 1 FROM webhook WHERE id = ? AND is_active = 1)
ORDER BY next_attempt_at, {{order}}
LIMIT {CLAIM_BATCH}
"""


def _send_order():
    return "id" if is_postgresql() else "rowid"


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
    with claiming("webhooks.deliveries"):
        failing = set() if max_failing is None else _failing_webhooks()
        limits = {False: max_webhooks, True: max_failing}
        chosen, per_webhook, per_lane = [], Counter(), Counter()
        candidates = _sql(_CANDIDATES.format(order=_send_order()), (stamp, stamp, stamp))
        for delivery_id, webhook_id in candidates.fetchall():
            lane = webhook_id in failing
            if per_webhook[webhook_id] >= CLAIM_BATCH:
                continue
            if webhook_id not in per_webhook:
                if per_lane[lane] == limits[lane]:
                    continue
                per_lane[lane] += 1
            per_webhook[webhook_id] += 1
            chosen.append(delivery_id)
        return _leased(chosen, now, settings, failing)


def claim_next(webhook_id, failing, now=None, settings=None):
    """Lease the next due deliveries of one webhook (at most CLAIM_BATCH), in
    send order: a lane that has sent its batch goes on with its webhook.
    Nothing while another process has some of its deliveries in flight, or
    once it is deactivated. Its own short write transaction, as claim_due."""
    settings = settings or current_settings()
    now = now or utcnow()
    stamp = str(now)
    with claiming("webhooks.deliveries"):
        params = (webhook_id, stamp, stamp, webhook_id, stamp, webhook_id)
        rows = _sql(_NEXT.format(order=_send_order()), params).fetchall()
        return _leased([row[0] for row in rows], now, settings, {webhook_id} if failing else ())


def _leased(chosen, now, settings, failing):
    """Lease `chosen` (ids) under one new claim token; them, in send order."""
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
        f"ORDER BY next_attempt_at, {_send_order()}",
        chosen,
    ).fetchall()
    return [Claimed(*row, claim_token=token, failing=row[1] in failing) for row in rows]


def _failing_webhooks():
    rows = _sql(
        "SELECT id FROM webhook WHERE is_active = 1 AND last_failure_at IS NOT NULL "
        "AND (last_success_at IS NULL OR last_failure_at > last_success_at)"
    )
    return {row[0] for row in rows.fetchall()}


def renew(claimed, now, settings):
    """Extend the lease of the deliveries still to send; return its monotonic end."""
    lease_until = str((now or utcnow()) + timedelta(seconds=settings.lease_seconds))
    ids = [item.id for item in claimed]
    with transaction():
        _sql(
            f"UPDATE delivery SET lease_until = ? WHERE claim_token = ? AND id IN ({_marks(ids)})",
            (lease_until, claimed[0].claim_token, *ids),
        )
    return time.monotonic() + settings.lease_seconds


def still_held(item):
    """Whether `item` is still pending under its claim: not cancelled (its
    webhook deactivated or deleted meanwhile), nor claimed by another
    process after its lease expired."""
    row = _sql("SELECT status, claim_token FROM delivery WHERE id = ?", (item.id,)).fetchone()
    return row is not None and tuple(row) == ("pending", item.claim_token)


def release(claimed):
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
