"""Prometheus metrics, read from the database at scrape time.

A custom collector rather than counters in memory: jobs may run in another
process (`agent-platform worker`), a restart would zero in-memory counters,
and the database is where every process writes anyway. The figures are a
workspace's (a key's scope: GET /metrics) or every workspace's, each under
its `workspace` label, with the database's size (the operator's listen
address, docs/operations.md#metrics). No workspace ever sees another's.
"""

from prometheus_client import generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from ..models import metrics as figures
from ..models.base import utcnow

PREFIX = "agent_platform_"


def exposition(workspace_id=None):
    """(body, content type) of a scrape: `workspace_id`'s figures, or every
    workspace's and the instance's when None."""
    # 0.0.4: the text format every Prometheus reads (the names need nothing newer).
    return generate_latest(Collector(workspace_id)), CONTENT_TYPE_PLAIN_0_0_4


class Collector:
    """What prometheus_client's exposition asks of a registry: collect()."""

    def __init__(self, workspace_id):
        self.workspace_id = workspace_id

    def collect(self):
        workspaces = self._workspaces()
        yield _messages(self.workspace_id)
        yield _send_errors(self.workspace_id)
        yield from _deliveries(self.workspace_id)
        yield _reply_latency(self.workspace_id, workspaces)
        yield from _queues(self.workspace_id, workspaces)
        if self.workspace_id is None:
            yield _database_size()

    def _workspaces(self):
        if self.workspace_id is not None:
            return [self.workspace_id]
        return figures.workspace_ids()


def _messages(workspace_id):
    family = CounterMetricFamily(
        PREFIX + "messages",
        "Messages stored (inbound: received) and each change of an outbound "
        "message's status (queued, sent, delivered, read, failed)",
        labels=["workspace", "channel", "direction", "status"],
    )
    for workspace, channel, direction, status, count in figures.message_tallies(workspace_id):
        family.add_metric([workspace, channel, direction, status], count)
    return family


def _send_errors(workspace_id):
    family = CounterMetricFamily(
        PREFIX + "message_send_errors",
        "Attempts to send an outbound message that failed, each retry included",
        labels=["workspace", "channel"],
    )
    for workspace, channel, errors in figures.send_error_tallies(workspace_id):
        family.add_metric([workspace, channel], errors)
    return family


def _deliveries(workspace_id):
    attempts = CounterMetricFamily(
        PREFIX + "webhook_attempts",
        "Attempts to deliver an event to a webhook, by result (success, failure)",
        labels=["workspace", "result"],
    )
    finished = CounterMetricFamily(
        PREFIX + "webhook_deliveries",
        "Webhook deliveries finished: succeeded, or failed after the last retry",
        labels=["workspace", "status"],
    )
    for workspace, counted, outcome, times in figures.delivery_tallies(workspace_id):
        (attempts if counted == "attempt" else finished).add_metric([workspace, outcome], times)
    return attempts, finished


def _reply_latency(workspace_id, workspaces):
    family = HistogramMetricFamily(
        PREFIX + "reply_latency_seconds",
        "Seconds from a customer's message being stored to the agent's reply being sent",
        labels=["workspace"],
    )
    tallies = {}
    for workspace, le, replies, seconds in figures.reply_latency_tallies(workspace_id):
        tallies.setdefault(workspace, {})[le] = (replies, seconds)
    for workspace in workspaces:
        buckets, total, seconds = [], 0, 0.0
        for le in figures.REPLY_LATENCY_BOUNDS:
            replies, spent = tallies.get(workspace, {}).get(le, (0, 0.0))
            total, seconds = total + replies, seconds + spent
            buckets.append((le, total))
        family.add_metric([workspace], buckets, seconds)
    return family


def _queues(workspace_id, workspaces):
    yield _gauge(
        "messages_to_send",
        "Outbound messages queued, not yet sent",
        workspaces,
        figures.messages_to_send(workspace_id),
    )
    yield _gauge(
        "webhook_deliveries_due",
        "Webhook deliveries whose next attempt is due now",
        workspaces,
        figures.deliveries_due(workspace_id, utcnow()),
    )
    yield _replies_pending(workspaces, figures.replies_pending(workspace_id))
    yield _gauge(
        "handoffs_waiting",
        "Conversations handed off to a person (status handoff)",
        workspaces,
        figures.handoffs_waiting(workspace_id),
    )


def _gauge(name, documentation, workspaces, rows):
    """A gauge per workspace, 0 for one without rows (absent is not zero)."""
    family = GaugeMetricFamily(PREFIX + name, documentation, labels=["workspace"])
    counted = dict(rows)
    for workspace in workspaces:
        family.add_metric([workspace], counted.get(workspace, 0))
    return family


def _replies_pending(workspaces, rows):
    family = GaugeMetricFamily(
        PREFIX + "replies_pending",
        "Replies the agent owes: waiting for their time (pending) or being answered (running)",
        labels=["workspace", "state"],
    )
    counted = {(workspace, state): jobs for workspace, state, jobs in rows}
    for workspace in workspaces:
        for state in ("pending", "running"):
            family.add_metric([workspace, state], counted.get((workspace, state), 0))
    return family


def _database_size():
    return GaugeMetricFamily(
        PREFIX + "database_size_bytes",
        "Size of the database: the SQLite file (its write-ahead log apart), "
        "or pg_database_size on PostgreSQL",
        value=figures.database_bytes(),
    )
