"""GET /metrics through the app: the scope, one workspace's figures only,
the queues' depths, the OpenAPI entry, and migration 0022 on an old database."""

import json
from datetime import datetime, timedelta

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent_platform.models import Conversation, Message, ReplyJob
from agent_platform.scopes import SCOPES
from agent_platform.services import metrics
from agent_platform.services.messages import queue_text
from conftest import ON_POSTGRESQL, assert_error
from conversations_helpers import inbound, send, setup_chat
from test_permissions import migrated_up_to
from webhooks_helpers import raise_event, register


def scrape(caller):
    """{(sample name, labels without workspace): value} and the workspaces named."""
    response = caller.get("/metrics")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.content_type == "text/plain; version=0.0.4; charset=utf-8"
    samples, workspaces = {}, set()
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            labels = dict(sample.labels)
            workspaces.add(labels.pop("workspace", None))
            samples[sample.name, frozenset(labels.items())] = sample.value
    return samples, workspaces


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


@pytest.fixture
def settings(tmp_path):
    # A webhook on a closed loopback port: registered, never delivered (no job runs).
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [9],
    }


RECEIVED = {"channel": "whatsapp", "direction": "inbound", "status": "received"}


def test_metrics_need_a_key_with_the_metrics_scope(client, make_caller):
    assert_error(client.get("/metrics"), 401, "MISSING_API_KEY")
    reader = make_caller(["agents:read", "messages:read"])
    assert_error(reader.get("/metrics"), 403, "INSUFFICIENT_SCOPE", "metrics:read")
    only_metrics = make_caller(["metrics:read"], workspace_id=reader.workspace_id)
    assert scrape(only_metrics)[1] == {reader.workspace_id}


def test_a_workspace_key_sees_its_own_figures_and_no_other(caller, other, make_caller):
    chat = setup_chat(caller)
    inbound(chat["channel"]["id"], "wamid.ONE")
    inbound(chat["channel"]["id"], "wamid.TWO", sender_id="5511955556666")
    mine, named = scrape(make_caller(["metrics:read"], workspace_id=caller.workspace_id))
    assert named == {caller.workspace_id}
    assert value(mine, "agent_platform_messages_total", **RECEIVED) == 2
    theirs, named = scrape(other)
    assert named == {other.workspace_id}
    assert value(theirs, "agent_platform_messages_total", **RECEIVED) is None
    assert value(theirs, "agent_platform_replies_pending", state="pending") == 0
    # The instance's own figure is not a workspace's to see.
    assert not any(name == "agent_platform_database_size_bytes" for name, _ in theirs)


@pytest.mark.skipif(not ON_POSTGRESQL, reason="SQLite has one writing transaction at a time")
def test_two_transactions_count_messages_at_once_and_both_are_counted(app, caller):
    # Each writes its own slot of the tally (migration 0026): one tally row
    # would make the second wait for the first's commit (issue 42).
    channel_id = setup_chat(caller)["channel"]["id"]
    stored = [inbound(channel_id, f"wamid.AT-ONCE-{n}").message.id for n in range(2)]
    url = app.config["DATABASE_URL"]
    with psycopg.connect(url) as one, psycopg.connect(url) as two:
        for connection, message_id in zip((one, two), stored, strict=True):
            connection.execute("SET lock_timeout = '2s'")
            connection.execute("UPDATE message SET status = 'read' WHERE id = %s", (message_id,))
        one.commit()
        two.commit()
    samples, _ = scrape(caller)
    read = {**RECEIVED, "status": "read"}
    assert value(samples, "agent_platform_messages_total", **read) == 2
    assert value(samples, "agent_platform_messages_total", **RECEIVED) == 2


def test_the_queues_count_what_waits(caller):
    # No job runs in the test app: what is queued stays queued.
    chat = setup_chat(caller)
    inbound(chat["channel"]["id"], "wamid.Q1")  # a reply is owed
    assert send(caller, chat["conversation"]["id"]).status_code in (201, 202)
    register(caller, "http://127.0.0.1:9/hook", events=["contact.created"])
    raise_event(caller.workspace_id)
    caller.post(f"/v1/chats/{chat['conversation']['id']}/handoff", json={})
    samples, _ = scrape(caller)
    assert value(samples, "agent_platform_replies_pending", state="pending") == 1
    assert value(samples, "agent_platform_messages_to_send") == 1
    assert value(samples, "agent_platform_webhook_deliveries_due") == 1
    assert value(samples, "agent_platform_handoffs_waiting") == 1


def test_every_workspace_and_the_database_size_for_the_operator(caller, other):
    setup_chat(caller)
    inbound(setup_chat(other)["channel"]["id"], "wamid.OTHER")
    body, content_type = metrics.exposition(None)
    families = {family.name: family for family in text_string_to_metric_families(body.decode())}
    (size,) = families["agent_platform_database_size_bytes"].samples
    assert size.value > 100_000
    handoffs = families["agent_platform_handoffs_waiting"].samples
    assert {sample.labels["workspace"] for sample in handoffs} >= {
        caller.workspace_id,
        other.workspace_id,
    }
    (received,) = [
        sample
        for sample in families["agent_platform_messages"].samples
        if sample.labels["direction"] == "inbound"
    ]
    assert (received.labels["workspace"], received.value) == (other.workspace_id, 1)


def test_openapi_documents_metrics_as_plain_text(client):
    operation = client.get("/openapi.json").get_json()["paths"]["/metrics"]["get"]
    assert operation["x-required-scope"] == "metrics:read"
    assert list(operation["responses"]["200"]["content"]) == ["text/plain"]
    assert {"401", "403", "429"} <= set(operation["responses"])


def test_migration_0022_counts_the_messages_there_were(tmp_path):
    connection = migrated_up_to(tmp_path, "0022", before_0022=_old_messages)
    rows = connection.execute(
        "SELECT workspace_id, channel_type, direction, status, messages FROM message_tally"
        " ORDER BY channel_type, direction"
    ).fetchall()
    assert rows == [
        ("w", "none", "outbound", "queued", 1),
        ("w", "telegram", "inbound", "received", 2),
    ]


def _old_messages(connection):
    connection.execute(
        "INSERT INTO channel (id, created_at, updated_at, workspace_id, name, type, is_active,"
        " settings) VALUES ('ch', 0, 0, 'w', 'T', 'telegram', 1, '{}')"
    )
    connection.execute(
        "INSERT INTO conversation (id, created_at, updated_at, workspace_id, channel_id, status)"
        " VALUES ('cv', 0, 0, 'w', 'ch', 'open')"
    )
    for number, channel, direction, status in (
        (1, "ch", "inbound", "received"),
        (2, "ch", "inbound", "received"),
        (3, None, "outbound", "queued"),
    ):
        connection.execute(
            "INSERT INTO message (id, created_at, updated_at, conversation_id, channel_id,"
            " direction, sender_type, type, status, metadata, edit_history, send_attempts)"
            " VALUES (?, 0, 0, 'cv', ?, ?, 'contact', 'text', ?, '{}', '[]', 0)",
            (f"m{number}", channel, direction, status),
        )


@pytest.mark.parametrize(
    "held, gains", [(sorted(set(SCOPES) - {"metrics:read"}), True), (["agents:read"], False)]
)
def test_migration_0022_gives_keys_that_held_every_scope_metrics_read(tmp_path, held, gains):
    connection = migrated_up_to(tmp_path, "0022", json.dumps(held))
    (scopes,) = connection.execute("SELECT scopes FROM api_key").fetchone()
    assert json.loads(scopes) == (sorted(held + ["metrics:read"]) if gains else held)


def test_a_reply_in_two_parts_is_one_reply_timed_from_the_customers_message(caller):
    chat = setup_chat(caller)
    asked = datetime(2026, 11, 28, 12, 0, 0)
    customer = inbound(chat["channel"]["id"], "wamid.L1", now=asked).message
    conversation = Conversation.get_by_id(chat["conversation"]["id"])
    job = ReplyJob.get(ReplyJob.message_id == customer.id)
    parts = [
        queue_text(conversation, "agent", text, {"reply_job_id": job.id}, asked)
        for text in ("Hello!", "We open at 9.")
    ]
    for seconds, part in zip((3.5, 4.5), parts, strict=True):
        sent_at = asked + timedelta(seconds=seconds)
        Message.update(status="sent", sent_at=sent_at).where(Message.id == part.id).execute()
    samples, _ = scrape(caller)
    latency = "agent_platform_reply_latency_seconds"
    assert value(samples, latency + "_count") == 1
    assert value(samples, latency + "_sum") == pytest.approx(3.5, abs=0.01)
    assert value(samples, latency + "_bucket", le="2") == 0
    assert value(samples, latency + "_bucket", le="5") == 1
    sent = {"channel": "whatsapp", "direction": "outbound", "status": "sent"}
    assert value(samples, "agent_platform_messages_total", **sent) == 2
