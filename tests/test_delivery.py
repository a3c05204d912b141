"""Delivery: queueing with the event, signatures, retries on a driven clock,
failure policies, alerts, leases, ordering, retention."""

import base64
import contextlib
import hashlib
import hmac
import json
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta
from email import message_from_bytes, policy

import pytest
import standardwebhooks

from agent_platform.db import transaction
from agent_platform.events import attempts, claims, delivery, delivery_settings, emit, signing
from agent_platform.models.webhooks import Delivery, DeliveryAttempt, Webhook
from webhooks_helpers import (
    Receiver,
    Reply,
    SmtpSink,
    deliveries_of,
    raise_event,
    register,
)

T0 = datetime(2030, 1, 1, 12, 0, 0)
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
    }


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def hook(caller, receiver):
    return register(caller, receiver.url)


def at(seconds):
    return T0 + timedelta(seconds=seconds)


def envelope_of(received):
    return json.loads(received.body)


# --- queueing -------------------------------------------------------------------


def test_one_delivery_per_subscribed_active_webhook(caller, other, receiver):
    everything = register(caller, receiver.url + "/all", ["*"])
    messages = register(caller, receiver.url + "/messages", ["messages"])
    contacts = register(caller, receiver.url + "/contact", ["contact.created"])
    register(caller, receiver.url + "/off", ["*"], is_active=False)
    elsewhere = register(other, receiver.url + "/other", ["*"])

    event = raise_event(caller.workspace_id, "contact.created", {"id": "c1"}, now=T0)
    raise_event(caller.workspace_id, "message.received", {"id": "m1"}, now=T0)

    assert [d.event for d in deliveries_of(everything["id"])] == [
        "contact.created",
        "message.received",
    ]
    assert [d.event for d in deliveries_of(messages["id"])] == ["message.received"]
    assert [d.event_id for d in deliveries_of(contacts["id"])] == [event.id]
    assert deliveries_of(elsewhere["id"]) == []
    assert Delivery.select().count() == 4


def test_no_delivery_when_the_change_rolls_back(caller, hook):
    with pytest.raises(RuntimeError, match="boom"):
        with transaction():
            emit(caller.workspace_id, "contact.created", {"id": "x"})
            raise RuntimeError("boom")
    assert deliveries_of(hook["id"]) == []


def test_envelope_and_headers_of_a_delivery(caller, hook, receiver):
    event = raise_event(caller.workspace_id, "contact.updated", {"id": "c9", "n": 1}, now=T0)
    assert delivery.deliver_due(now=T0) == 1
    (got,) = receiver.requests
    assert (
        got.body
        == (  # compact JSON, in this order
            b'{"event":"contact.updated","timestamp":"2030-01-01T12:00:00.000000Z",'
            b'"webhook_id":"' + hook["id"].encode() + b'","data":{"id":"c9","n":1},'
            b'"event_id":"' + event.id.encode() + b'"}'
        )
    )
    timestamp = "1893499200"  # T0 in Unix seconds
    assert got.headers["X-Webhook-Timestamp"] == timestamp
    assert got.headers["webhook-timestamp"] == timestamp
    assert got.headers["X-Webhook-ID"] == hook["id"]
    assert got.headers["webhook-id"] == event.id
    assert got.headers["Content-Type"] == "application/json"
    secret = hook["secret"].encode()
    assert (
        got.headers["X-Webhook-Signature"]
        == "sha256="
        + hmac.new(secret, timestamp.encode() + b"." + got.body, hashlib.sha256).hexdigest()
    )
    assert (
        got.headers["X-Service-Signature"]
        == "sha256=" + hmac.new(secret, got.body, hashlib.sha256).hexdigest()
    )
    (row,) = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count, row.lease_until) == ("succeeded", 1, None)


# --- signatures -----------------------------------------------------------------


def test_signature_vectors_of_both_header_variants():
    # HMAC-SHA256 keyed with the secret string (prefix included) over
    # "<timestamp>.<body>" (X-Webhook-Signature) and over the body (X-Service-Signature).
    body = b'{"event":"message.received","event_id":"e1"}'
    secret = "whsec_c2VjcmV0LWJ5dGVzLWZvci10ZXN0cw=="
    assert signing.timestamp_signature(secret, 1700000000, body) == (
        "sha256=910b50904ee08500334008b304a3421e2bd65e96812e96225b39f42034c738e3"
    )
    assert signing.body_signature(secret, body) == (
        "sha256=390ce53fe37bd4af1ccf2d639146f4ee5e251cf3ff33cddccec15b8b0543ec61"
    )
    headers = signing.signature_headers([secret], "wh-1", "ev-1", 1700000000, body)
    assert headers["X-Webhook-Signature"] == signing.timestamp_signature(secret, 1700000000, body)
    assert headers["X-Webhook-Timestamp"] == headers["webhook-timestamp"] == "1700000000"
    assert (headers["X-Webhook-ID"], headers["webhook-id"]) == ("wh-1", "ev-1")


def test_standard_webhooks_vector_of_the_specification():
    # The example of the Standard Webhooks specification.
    signature = signing.standard_signature(
        SPEC_SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}'
    )
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_a_real_delivery_verifies_with_the_standardwebhooks_library(caller, hook, receiver):
    raise_event(caller.workspace_id, "message.sent", {"id": "m1"})
    delivery.deliver_due()
    (got,) = receiver.requests
    verified = standardwebhooks.Webhook(hook["secret"]).verify(got.body, got.headers)
    assert verified["event"] == "message.sent"
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(signing.new_secret()).verify(got.body, got.headers)


def test_secrets_have_the_whsec_prefix_and_32_random_bytes():
    first, second = signing.new_secret(), signing.new_secret()
    assert first.startswith("whsec_") and first != second
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 32


def test_rotation_signs_with_both_secrets_for_24_hours(caller, hook, receiver):
    from agent_platform.services import webhooks

    rotated = webhooks.rotate_secret(caller.workspace_id, hook["id"], now=T0)
    old, new = hook["secret"], rotated.secret
    assert new != old
    raise_event(caller.workspace_id, now=at(3600))
    raise_event(caller.workspace_id, now=at(25 * 3600))
    delivery.deliver_due(now=at(3600))
    delivery.deliver_due(now=at(25 * 3600))
    during, after = receiver.requests
    stamp = during.headers["X-Webhook-Timestamp"]
    assert during.headers["X-Webhook-Signature"].split(" ") == [
        signing.timestamp_signature(new, stamp, during.body),
        signing.timestamp_signature(old, stamp, during.body),
    ]
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    assert during.headers["X-Service-Signature"].split(" ")[1] == signing.body_signature(
        old, during.body
    )
    assert after.headers["X-Service-Signature"] == signing.body_signature(new, after.body)


# --- retries ---------------------------------------------------------------------


def _attempt_times(webhook_id):
    (row,) = deliveries_of(webhook_id)
    attempts = DeliveryAttempt.select().where(DeliveryAttempt.delivery == row.id)
    return row, [a.attempted_at for a in attempts.order_by(DeliveryAttempt.number)]


def test_default_schedule_retries_after_5_15_60_300_900_seconds(caller, hook, receiver):
    receiver.default = Reply(500, body=b"down")
    raise_event(caller.workspace_id, now=T0)
    moments = [0, 5, 20, 80, 380, 1280]
    for previous, moment in zip([None] + moments, moments, strict=False):
        if previous is not None:
            assert delivery.deliver_due(now=at(moment - 0.001)) == 0
        assert delivery.deliver_due(now=at(moment)) == 1
    row, times = _attempt_times(hook["id"])
    assert times == [at(moment) for moment in moments]
    assert (row.status, row.attempt_count, row.next_attempt_at) == ("failed", 6, None)
    assert delivery.deliver_due(now=at(100000)) == 0
    bodies = {r.body for r in receiver.requests}
    stamps = [r.headers["X-Webhook-Timestamp"] for r in receiver.requests]
    assert len(bodies) == 1 and len(set(stamps)) == 6  # same bytes, fresh timestamps
    assert len({r.headers["webhook-id"] for r in receiver.requests}) == 1


def test_alternative_schedule_retries_at_once_then_1_5_15_60_minutes(app, caller, hook, receiver):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = [0, 60, 300, 900, 3600]
    receiver.default = Reply(503)
    raise_event(caller.workspace_id, now=T0)
    assert delivery.deliver_due(now=T0) == 2  # the first retry is immediate
    for moment in (60, 360, 1260, 4860):
        assert delivery.deliver_due(now=at(moment - 1)) == 0
        assert delivery.deliver_due(now=at(moment)) == 1
    row, times = _attempt_times(hook["id"])
    assert times == [T0, T0, at(60), at(360), at(1260), at(4860)]
    assert row.status == "failed"


def test_a_redelivered_delivery_runs_the_whole_schedule_again(app, caller, hook, receiver):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = [5, 15]
    receiver.default = Reply(500)
    raise_event(caller.workspace_id, now=T0)
    for moment in (0, 5, 20):
        delivery.deliver_due(now=at(moment))
    [row] = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count) == ("failed", 3)
    redeliver = f"/v1/webhooks/{hook['id']}/deliveries/{row.id}/redeliver"
    assert caller.post(redeliver).status_code == 202
    delivery.deliver_due(now=at(30))  # the new round's first failure: 5 s, as the first time
    [row] = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count, row.next_attempt_at) == ("pending", 4, at(35))
    delivery.deliver_due(now=at(35))
    assert deliveries_of(hook["id"])[0].next_attempt_at == at(50)
    delivery.deliver_due(now=at(50))
    [row] = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count) == ("failed", 6)


def test_retry_after_is_honoured_when_longer(caller, hook, receiver):
    receiver.reply(
        Reply(429, headers={"Retry-After": "120"}),
        Reply(503, headers={"Retry-After": "30"}),
        Reply(503, headers={"Retry-After": "1"}),
        Reply(500, headers={"Retry-After": "999"}),
    )
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)
    assert deliveries_of(hook["id"])[0].next_attempt_at == at(120)  # 429: longer than 5
    delivery.deliver_due(now=at(120))
    assert deliveries_of(hook["id"])[0].next_attempt_at == at(150)  # 503: longer than 15
    delivery.deliver_due(now=at(150))
    assert deliveries_of(hook["id"])[0].next_attempt_at == at(210)  # 503: 1 < 60
    delivery.deliver_due(now=at(210))
    assert deliveries_of(hook["id"])[0].next_attempt_at == at(510)  # 500: ignored


@pytest.mark.parametrize(
    ("retry_after", "next_in"),
    [
        ("Tue, 01 Jan 2030 12:05:00 GMT", 300),  # an HTTP date, from the attempt's clock
        ("Tue, 01 Jan 2030 13:00:00 +0100", 5),  # 12:00 UTC: now, so the schedule's 5 s
        ("Tue, 01 Jan 2030 11:50:00 GMT", 5),  # in the past
        ("Wed, 01 Jan 2031 12:00:00 GMT", 86400),  # a year away: capped at a day
        ("0000090", 90),
        ("1" + "0" * 5000, 86400),  # more digits than int() reads
        ("²", 5),  # a digit to str.isdigit, not a number
        ("Mon, 01 Jan 99999 00:00:00 GMT", 5),
        ("soon", 5),
    ],
)
def test_retry_after_as_a_date_or_hostile_value(caller, hook, receiver, retry_after, next_in):
    receiver.reply(Reply(429, headers={"Retry-After": retry_after}))
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)
    [row] = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count, row.next_attempt_at) == ("pending", 1, at(next_in))


@pytest.mark.parametrize(
    ("retry_after", "next_in"),
    [
        ("0", 0),
        ("000", 0),
        ("00000000120", 120),  # more leading zeros than digits kept
        ("Tue, 01 Jan 2030 11:50:00 GMT", 0),  # in the past: now, not a second later
        ("Tue, 01 Jan 2030 13:05:00 +0100", 300),
    ],
)
def test_retry_after_against_a_schedule_starting_at_once(
    app, caller, hook, receiver, retry_after, next_in
):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = [0, 60]
    receiver.reply(Reply(503, headers={"Retry-After": retry_after}))
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)
    [row] = deliveries_of(hook["id"])
    if next_in:
        assert (row.status, row.attempt_count, row.next_attempt_at) == ("pending", 1, at(next_in))
    else:  # due at once: the same run sent it again (and the receiver took it)
        assert (row.status, row.attempt_count) == ("succeeded", 2)


def test_a_retry_after_date_is_read_in_utc_whatever_the_local_zone(
    caller, hook, receiver, monkeypatch
):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        receiver.reply(Reply(429, headers={"Retry-After": "Tue, 01 Jan 2030 13:05:00 +0100"}))
        raise_event(caller.workspace_id, now=T0)
        delivery.deliver_due(now=T0)
    finally:
        monkeypatch.undo()
        time.tzset()
    [row] = deliveries_of(hook["id"])
    assert row.next_attempt_at == at(300)


def test_what_counts_as_failure(app, caller, hook, receiver):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = []
    app.config["WEBHOOKS_TIMEOUT_SECONDS"] = 1
    receiver.reply(
        Reply(302, headers={"Location": "http://127.0.0.1:1/"}),
        Reply(404, body=b"n" * 5000),
        Reply(200, delay=1.6),
        Reply(204, body=b""),
    )
    for _ in range(4):
        raise_event(caller.workspace_id, now=T0)
    started = time.monotonic()
    delivery.deliver_due(now=T0)
    job_ms = (time.monotonic() - started) * 1000
    rows = deliveries_of(hook["id"])
    attempts = [DeliveryAttempt.get(DeliveryAttempt.delivery == row.id) for row in rows]
    assert [row.status for row in rows] == ["failed", "failed", "failed", "succeeded"]
    assert [a.success for a in attempts] == [False, False, False, True]
    assert [a.http_status for a in attempts] == [302, 404, None, 204]
    assert [a.error for a in attempts] == [
        "HTTP 302 Found",
        "HTTP 404 Not Found",
        "timeout: no answer in 1 s",
        None,
    ]
    assert attempts[1].response_body == "n" * 1024  # only the first 1 KB is kept
    assert all(a.response_time_ms is not None for a in attempts)
    assert 1000 <= attempts[2].response_time_ms <= job_ms  # the time the attempt took


@pytest.mark.parametrize(
    ("status", "success", "error"),
    [
        (200, True, None),
        (299, True, None),
        (300, False, "HTTP 300 Multiple Choices"),
        (599, False, "HTTP 599"),  # an answer with no reason phrase: none is invented
    ],
)
def test_any_2xx_succeeds_and_a_failure_names_status_and_reason(
    caller, hook, receiver, status, success, error
):
    receiver.reply(Reply(status))
    result = caller.post(f"/v1/webhooks/{hook['id']}/test").get_json()["data"]
    assert (result["success"], result["http_status"], result["error"]) == (success, status, error)


def test_an_answer_not_in_utf8_is_kept_with_replacement_characters(caller, hook, receiver):
    # Latin-1, then UTF-8 cut in the middle of a character by the 1 KB kept.
    receiver.reply(Reply(500, body=b"caf\xe9 " + "é".encode() * 600))
    result = caller.post(f"/v1/webhooks/{hook['id']}/test").get_json()["data"]
    assert result["response_body"] == "caf\ufffd " + "é" * 509 + "\ufffd"


def test_connection_refused_is_recorded_and_retried(app, caller, receiver):
    hook = register(caller, receiver.url)
    receiver.close()
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)
    row, _ = _attempt_times(hook["id"])
    attempt = DeliveryAttempt.get(DeliveryAttempt.delivery == row.id)
    assert (attempt.success, attempt.http_status) == (False, None)
    assert attempt.error.startswith("connection error") and attempt.response_time_ms is not None
    assert (row.status, row.next_attempt_at) == ("pending", at(5))
    receiver.__init__(port=receiver.port)  # the receiver comes back on the same port
    delivery.deliver_due(now=at(5))
    assert deliveries_of(hook["id"])[0].status == "succeeded"


def test_a_connection_error_is_reported_whole_up_to_300_characters(caller, receiver):
    receiver.close()  # nothing listens: every test below is refused

    def error_for(path):
        hook = register(caller, receiver.url + path)
        return caller.post(f"/v1/webhooks/{hook['id']}/test").get_json()["data"]["error"]

    prefix = "connection error: "
    probe = error_for("-x")
    assert probe.startswith(prefix + "ConnectionError: ") and probe.endswith('refused"))')
    # The error names the URL's path: a longer path makes the text as long as wanted.
    text = probe.removeprefix(prefix)

    def text_of(length):
        path = "-" + "x" * (length - len(text) + 1)
        return path, text.replace("/hook-x ", f"/hook{path} ")

    path, whole = text_of(300)
    assert len(whole) == 300 and error_for(path) == prefix + whole
    path, too_long = text_of(301)
    assert error_for(path) == prefix + too_long[:297] + "..."


def test_send_time_guard_refuses_a_target_turned_private(app, caller, hook, receiver):
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = False
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)
    row, _ = _attempt_times(hook["id"])
    attempt = DeliveryAttempt.get(DeliveryAttempt.delivery == row.id)
    assert (attempt.success, attempt.http_status) == (False, None)
    assert "URL refused" in attempt.error and "loopback" in attempt.error
    assert attempt.response_time_ms is not None
    assert receiver.requests == []


# --- failure policies -------------------------------------------------------------


def _fail_deliveries(app, caller, count, start=0):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = []
    for index in range(count):
        raise_event(caller.workspace_id, now=at(start + index))
    delivery.deliver_due(now=at(start + count))


@contextlib.contextmanager
def alerted(app, caller, receiver):
    """An SMTP server for the alerts, once the webhook failed three times."""
    sink = SmtpSink()
    try:
        app.config.update(ALERTS_EMAIL="ops@example.com", SMTP_HOST="127.0.0.1")
        app.config["SMTP_PORT"] = sink.port
        receiver.default = Reply(500)
        _fail_deliveries(app, caller, 3)
        yield sink
    finally:
        sink.close()


def test_failing_policy_alerts_once_by_email_and_keeps_queueing(app, caller, hook, receiver):
    with alerted(app, caller, receiver) as sink:
        webhook = Webhook.get_by_id(hook["id"])
        assert (webhook.status, webhook.is_active, webhook.consecutive_failures) == (
            "failing",
            True,
            3,
        )
        (mail,) = sink.messages  # one alert, when it turned failing
        assert mail.rcpt_tos == ["ops@example.com"]
        message = message_from_bytes(mail.content)
        assert hook["url"] in message["Subject"]
        assert hook["id"] in message.get_payload()
        raise_event(caller.workspace_id, now=at(10))
        assert deliveries_of(hook["id"])[-1].status == "pending"  # still queued
        receiver.default = Reply(200)
        delivery.deliver_due(now=at(10))
        webhook = Webhook.get_by_id(hook["id"])
        assert (webhook.status, webhook.consecutive_failures) == ("active", 0)
        assert webhook.last_success_at == at(10)


def test_a_webhook_url_cannot_write_headers_into_the_alert(app, caller, receiver):
    # The subject names the URL, which a workspace chose: an encoded word in it
    # that decodes to CR LF must not become headers of the operator's mail.
    injection = "=?utf-8?q?a=0D=0ABcc:_evil@evil.example=0D=0AReply-To:_x@evil.example?="
    url = f"{receiver.url}/?x={injection}"
    register(caller, url)
    with alerted(app, caller, receiver) as sink:
        (mail,) = sink.messages
        assert mail.rcpt_tos == ["ops@example.com"]
        block = mail.content.split(b"\r\n\r\n", 1)[0].decode("ascii").split("\r\n")
        names = [line.split(":", 1)[0] for line in block if line[:1] not in (" ", "\t")]
        assert "Bcc" not in names and "Reply-To" not in names, names
        alert = message_from_bytes(mail.content, policy=policy.default)
        # The subject as a mail reader shows it, one line; the text has the URL as it is.
        shown = "a Bcc: evil@evil.example Reply-To: x@evil.example"
        assert alert["Subject"] == f"Webhook failing: {receiver.url}/?x={shown}"
        assert url in alert.get_content()


def test_failing_policy_without_email_logs_the_alert(app, caller, hook, receiver, caplog):
    receiver.default = Reply(500)
    _fail_deliveries(app, caller, 1)
    assert Webhook.get_by_id(hook["id"]).status == "failing"
    assert any("ALERT" in r.getMessage() and hook["url"] in r.getMessage() for r in caplog.records)


def test_deactivate_policy_after_5_consecutive_failed_deliveries(app, caller, hook, receiver):
    app.config["WEBHOOKS_FAILURE_POLICY"] = "deactivate"
    receiver.default = Reply(500)
    _fail_deliveries(app, caller, 4)
    assert Webhook.get_by_id(hook["id"]).consecutive_failures == 4
    receiver.reply(Reply(200))  # one success resets the count
    _fail_deliveries(app, caller, 1, start=10)
    assert Webhook.get_by_id(hook["id"]).consecutive_failures == 0
    _fail_deliveries(app, caller, 4, start=20)
    webhook = Webhook.get_by_id(hook["id"])
    assert (webhook.status, webhook.is_active, webhook.consecutive_failures) == ("active", True, 4)
    _fail_deliveries(app, caller, 1, start=30)
    webhook = Webhook.get_by_id(hook["id"])
    assert (webhook.status, webhook.is_active) == ("deactivated", False)
    before = len(deliveries_of(hook["id"]))
    raise_event(caller.workspace_id, now=at(40))
    assert len(deliveries_of(hook["id"])) == before  # nothing more is queued

    receiver.default = Reply(200)
    response = caller.patch(f"/v1/webhooks/{hook['id']}", json={"is_active": True})
    assert response.get_json()["data"]["status"] == "active"
    event = raise_event(caller.workspace_id, now=at(50))
    delivery.deliver_due(now=at(50))
    assert envelope_of(receiver.requests[-1])["event_id"] == event.id
    assert deliveries_of(hook["id"])[-1].status == "succeeded"


def test_pending_deliveries_end_when_the_webhook_is_deactivated(caller, hook, receiver):
    raise_event(caller.workspace_id, now=T0)
    caller.patch(f"/v1/webhooks/{hook['id']}", json={"is_active": False})
    assert delivery.deliver_due(now=T0) == 0
    assert deliveries_of(hook["id"])[0].status == "failed"
    assert receiver.requests == []


def test_deactivation_ends_only_that_webhooks_pending_deliveries(caller, hook, receiver):
    from agent_platform.services import webhooks

    elsewhere = register(caller, receiver.url + "/elsewhere")
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)  # delivered to both
    receiver.default = Reply(500)
    raise_event(caller.workspace_id, now=at(1))
    delivery.deliver_due(now=at(1))  # failed once at both: retried at 6 s
    webhooks.update_webhook(caller.workspace_id, hook["id"], {"is_active": False}, now=at(3))
    done, ended = deliveries_of(hook["id"])
    assert (done.status, done.completed_at, done.updated_at) == ("succeeded", T0, T0)
    assert (ended.status, ended.next_attempt_at, ended.completed_at, ended.updated_at) == (
        "failed",
        None,
        at(3),
        at(3),
    )
    assert [(row.status, row.next_attempt_at) for row in deliveries_of(elsewhere["id"])] == [
        ("succeeded", None),
        ("pending", at(6)),
    ]


def test_deactivated_while_sending_the_job_stops_at_the_attempt_in_flight(
    app, caller, hook, receiver
):
    import threading

    receiver.reply(Reply(200, delay=0.5))
    raise_event(caller.workspace_id, now=T0)
    raise_event(caller.workspace_id, now=T0)
    made = []

    def run():
        with app.app_context():
            made.append(delivery.deliver_due(now=T0))

    job = threading.Thread(target=run)
    job.start()
    try:
        for _ in range(250):  # until the first attempt reaches the receiver
            if receiver.requests:
                break
            threading.Event().wait(0.02)
        caller.patch(f"/v1/webhooks/{hook['id']}", json={"is_active": False})
    finally:
        job.join()
    assert made == [1] and len(receiver.requests) == 1
    assert [(row.status, row.attempt_count) for row in deliveries_of(hook["id"])] == [
        ("failed", 1),
        ("failed", 0),
    ]


def _statuses_while(app, receiver, request_number, run):
    """The deliveries' statuses while the receiver holds its request
    `request_number` (1-based), and what `run` returned (in a thread)."""
    import threading

    seen, made = {}, []

    def job():
        with app.app_context():
            made.append(run())

    worker = threading.Thread(target=job)
    worker.start()
    try:
        for _ in range(500):
            if len(receiver.requests) >= request_number:
                with app.app_context():
                    seen.update(Counter(row.status for row in Delivery.select()))
                break
            threading.Event().wait(0.01)
    finally:
        worker.join()
    return seen, made


def test_successes_are_recorded_ten_at_a_time(app, caller, hook, receiver, monkeypatch):
    monkeypatch.setattr(delivery, "RECORD_WITHIN", 60)  # the count alone decides
    receiver.reply(*[Reply(200)] * 11, Reply(200, delay=0.5))
    for _ in range(15):
        raise_event(caller.workspace_id, now=T0)
    seen, made = _statuses_while(app, receiver, 12, lambda: delivery.deliver_due(now=T0))
    # The 12th in flight: the first ten recorded together, the 11th still waits.
    assert seen == {"succeeded": 10, "pending": 5}
    assert made == [15]
    rows = deliveries_of(hook["id"])
    assert [(row.status, row.attempt_count) for row in rows] == [("succeeded", 1)] * 15
    assert DeliveryAttempt.select().count() == 15
    assert Webhook.get_by_id(hook["id"]).last_success_at == T0


def test_a_success_waits_at_most_a_quarter_second(app, caller, hook, receiver, monkeypatch):
    monkeypatch.setattr(delivery, "RECORD_WITHIN", 0.1)
    receiver.reply(*[Reply(200, delay=0.2)] * 3)
    for _ in range(3):
        raise_event(caller.workspace_id, now=T0)
    seen, made = _statuses_while(app, receiver, 3, lambda: delivery.deliver_due(now=T0))
    # The second answer came past the bound: both recorded before the third send.
    assert seen == {"succeeded": 2, "pending": 1}
    assert made == [3]


def test_successes_sent_but_not_recorded_are_sent_again(app, caller, hook, receiver, monkeypatch):
    def storage_fails(answered, settings):
        raise OSError("disk full")

    for _ in range(3):
        raise_event(caller.workspace_id, now=T0)
    monkeypatch.setattr(delivery, "record_successes", storage_fails)
    assert delivery.deliver_due(now=T0) == 0  # the lane failed: its lease will expire
    assert len(receiver.requests) == 3
    assert {row.status for row in deliveries_of(hook["id"])} == {"pending"}
    monkeypatch.undo()
    settings = delivery_settings.current_settings()
    assert delivery.deliver_due(now=at(settings.lease_seconds - 1)) == 0  # still leased
    assert delivery.deliver_due(now=at(settings.lease_seconds + 1)) == 3
    assert [envelope_of(r)["event_id"] for r in receiver.requests[3:]] == [
        envelope_of(r)["event_id"] for r in receiver.requests[:3]
    ]
    assert {row.status for row in deliveries_of(hook["id"])} == {"succeeded"}


def test_a_send_in_flight_when_deactivated_loses_its_delivery(caller, hook, receiver):
    from agent_platform.services import webhooks

    raise_event(caller.workspace_id, now=T0)
    (in_flight,) = claims.claim_due(now=T0)  # a process is sending it (lease: 60 s)
    webhooks.update_webhook(caller.workspace_id, hook["id"], {"is_active": False}, now=at(1))
    webhooks.update_webhook(caller.workspace_id, hook["id"], {"is_active": True}, now=at(2))
    assert webhooks.recover(caller.workspace_id, hook["id"], T0, now=at(2))["redelivered"] == 1
    # The old send answers late: its attempt is logged, the delivery is no longer its own.
    late = attempts.Outcome(True, 200, 1)
    settings = delivery_settings.current_settings()
    assert attempts.record_attempt(in_flight, late, at(3), settings) == (None, False)
    assert delivery.deliver_due(now=at(3)) == 1  # sent again at once, not when the lease ends
    (row,) = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count) == ("succeeded", 2)


def test_the_policy_ends_the_deliveries_queued_behind_the_last_failure(app, caller, hook, receiver):
    app.config.update(WEBHOOKS_FAILURE_POLICY="deactivate", WEBHOOKS_DEACTIVATE_AFTER=1)
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = []
    receiver.default = Reply(500)
    raise_event(caller.workspace_id, now=T0)
    raise_event(caller.workspace_id, now=T0)
    assert delivery.deliver_due(now=at(1)) == 1
    sent, queued = deliveries_of(hook["id"])
    assert (sent.status, sent.attempt_count, sent.completed_at) == ("failed", 1, at(1))
    assert (queued.status, queued.attempt_count, queued.completed_at) == ("failed", 0, at(1))
    assert queued.updated_at == at(1)


# --- leases, ordering ----------------------------------------------------------------


def test_a_crashed_attempt_is_claimed_again_after_its_lease(caller, hook, receiver):
    raise_event(caller.workspace_id, now=T0)
    (claimed,) = claims.claim_due(now=T0)  # a process claims, then dies before sending
    assert Delivery.get_by_id(claimed.id).lease_until == at(60)
    assert claims.claim_due(now=T0) == []  # nobody else gets it meanwhile
    assert delivery.deliver_due(now=at(59)) == 0
    assert receiver.requests == []
    assert delivery.deliver_due(now=at(60)) == 1
    (row,) = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count) == ("succeeded", 1)
    # The dead process's late record cannot move the delivery any more.
    stale = attempts.Outcome(False, 500, 1, "HTTP 500")
    settings = delivery_settings.current_settings()
    assert attempts.record_attempt(claimed, stale, at(61), settings) == (None, False)
    row = deliveries_of(hook["id"])[0]
    assert (row.status, row.attempt_count) == ("succeeded", 2)


def test_a_bug_while_sending_is_logged_and_the_lease_brings_the_delivery_back(
    caller, hook, receiver, monkeypatch, caplog
):
    def broken(*args):
        raise RuntimeError("a bug in the sender")

    raise_event(caller.workspace_id, now=T0)
    with monkeypatch.context() as patched:
        patched.setattr(delivery, "send_signed", broken)
        assert delivery.deliver_due(now=T0) == 0  # no attempt made
    [logged] = [r for r in caplog.records if r.exc_info]
    assert logged.getMessage() == "sending webhook deliveries failed; their lease will expire"
    assert "a bug in the sender" in str(logged.exc_info[1])
    assert receiver.requests == [] and delivery.deliver_due(now=at(59)) == 0
    assert delivery.deliver_due(now=at(60)) == 1
    (row,) = deliveries_of(hook["id"])
    assert (row.status, row.attempt_count) == ("succeeded", 1)


def test_recording_says_which_alert_to_send_and_whether_the_claim_holds(app, caller, hook):
    # What the job acts on: an alert to send, and whether to go on with the batch.
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = []
    settings = delivery_settings.current_settings()
    for _ in range(4):
        raise_event(caller.workspace_id, now=T0)
    sent, failed, ignored, orphan = claims.claim_due(now=T0)
    ok, down = attempts.Outcome(True, 200, 3), attempts.Outcome(False, 500, 3, "HTTP 500")
    assert attempts.record_attempt(sent, ok, T0, settings) == (None, True)
    assert attempts.record_attempt(failed, down, at(1), settings) == (
        {
            "webhook_id": hook["id"],
            "workspace_id": caller.workspace_id,
            "url": hook["url"],
            "description": "",
            "consecutive_failures": 1,
            "at": "2030-01-01T12:00:01.000000Z",
        },
        True,
    )
    patient = replace(settings, policy="deactivate")  # not yet: 2 of 5
    assert attempts.record_attempt(ignored, down, at(2), patient) == (None, True)
    caller.delete(f"/v1/webhooks/{hook['id']}")
    assert attempts.record_attempt(orphan, ok, at(3), settings) == (None, False)


def test_a_failure_marks_only_its_own_webhook(caller, hook, receiver):
    down = Receiver(default=Reply(500))
    try:
        failing = register(caller, down.url)
        raise_event(caller.workspace_id, now=T0)
        delivery.deliver_due(now=T0)

        def last_failure_of(webhook):
            return caller.get(f"/v1/webhooks/{webhook['id']}").get_json()["data"]["last_failure_at"]

        assert last_failure_of(failing) == "2030-01-01T12:00:00.000000Z"
        assert last_failure_of(hook) is None
    finally:
        down.close()


def test_a_renewed_lease_ends_its_length_after_the_renewal(caller, hook):
    raise_event(caller.workspace_id, now=T0)
    claimed = claims.claim_due(now=T0)
    # The sending process renews the lease at 30 s, then dies.
    claims.renew(claimed, at(30), delivery_settings.current_settings())
    assert claims.claim_due(now=at(89)) == []
    assert [item.id for item in claims.claim_due(now=at(90))] == [claimed[0].id]


def test_a_claim_takes_50_deliveries_of_a_webhook_and_goes_on_to_the_next(caller, receiver):
    busy = register(caller, receiver.url + "/busy")
    for _ in range(51):
        raise_event(caller.workspace_id, now=T0)
    quiet = register(caller, receiver.url + "/quiet")
    raise_event(caller.workspace_id, now=T0)  # behind the busy webhook's 52 in send order
    claimed = claims.claim_due(now=T0)
    assert Counter(item.webhook_id for item in claimed) == {busy["id"]: 50, quiet["id"]: 1}
    in_order = [row.id for row in deliveries_of(busy["id"])][:50]
    assert [item.id for item in claimed if item.webhook_id == busy["id"]] == in_order


def test_a_claim_for_one_webhook_takes_all_its_due_deliveries(caller, receiver):
    hooks = [register(caller, f"{receiver.url}/{n}") for n in range(2)]
    for _ in range(3):
        raise_event(caller.workspace_id, now=T0)  # one delivery per webhook, in turn
    claimed = claims.claim_due(now=T0, max_webhooks=1)
    (chosen,) = {item.webhook_id for item in claimed}
    assert chosen in {hook["id"] for hook in hooks} and len(claimed) == 3


def test_a_webhook_deactivated_by_a_failure_gets_nothing_more_of_its_batch(
    app, caller, hook, receiver
):
    app.config.update(WEBHOOKS_FAILURE_POLICY="deactivate", WEBHOOKS_DEACTIVATE_AFTER=2)
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = []
    receiver.default = Reply(500)
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)  # failed once: the next batch is sent in the failing lane
    raise_event(caller.workspace_id, now=at(1))
    raise_event(caller.workspace_id, now=at(1))
    assert delivery.deliver_due(now=at(2)) == 1  # the second failure deactivates it
    assert len(receiver.requests) == 2
    assert [(row.status, row.attempt_count) for row in deliveries_of(hook["id"])] == [
        ("failed", 1),
        ("failed", 1),
        ("failed", 0),
    ]


def test_after_a_failure_the_batch_goes_on_to_the_same_webhook(app, caller, hook, receiver):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = [60]
    second = Receiver()
    try:
        other = register(caller, second.url)
        receiver.reply(Reply(500), Reply(500))
        raise_event(caller.workspace_id, now=T0)
        delivery.deliver_due(now=T0)  # the hook failed: its next batch is in the failing lane
        raise_event(caller.workspace_id, now=at(1))
        raise_event(caller.workspace_id, now=at(1))
        assert delivery.deliver_due(now=at(1)) == 4
        for server, webhook in ((receiver, hook), (second, other)):
            assert [envelope_of(seen)["webhook_id"] for seen in server.requests] == [
                webhook["id"]
            ] * 3
    finally:
        second.close()


def test_attempts_of_one_webhook_follow_event_order(caller, hook, receiver):
    receiver.reply(Reply(500))  # the first event fails once
    events = [raise_event(caller.workspace_id, data={"n": n}, now=T0) for n in range(12)]
    delivery.deliver_due(now=T0)
    received = [envelope_of(r)["event_id"] for r in receiver.requests]
    assert received == [event.id for event in events]
    delivery.deliver_due(now=at(5))
    assert envelope_of(receiver.requests[-1])["event_id"] == events[0].id
    assert len(receiver.requests) == 13


def test_a_lane_goes_on_with_its_webhook_past_its_batch(caller, hook, receiver, monkeypatch):
    claimed_by = Counter()

    def counted(name, claim):
        def claiming(*args, **kwargs):
            found = claim(*args, **kwargs)
            claimed_by[name] += len(found)
            return found

        return claiming

    monkeypatch.setattr(delivery, "claim_due", counted("job", claims.claim_due))
    monkeypatch.setattr(delivery, "claim_next", counted("lane", claims.claim_next))
    events = [raise_event(caller.workspace_id, data={"n": n}, now=T0) for n in range(120)]
    assert delivery.deliver_due(now=T0) == 120
    assert [envelope_of(r)["event_id"] for r in receiver.requests] == [e.id for e in events]
    assert claimed_by == {"job": 50, "lane": 70}  # 20 more in its third batch
    assert {row.status for row in deliveries_of(hook["id"])} == {"succeeded"}


def test_a_lane_gives_its_slot_back_to_the_claim_after_a_poll(
    app, caller, hook, receiver, monkeypatch
):
    app.config["WEBHOOKS_POLL_SECONDS"] = 0.001  # over before the first batch is
    calls = Counter()
    monkeypatch.setattr(delivery, "claim_next", lambda *args: calls.update(["lane"]) or [])
    for n in range(60):
        raise_event(caller.workspace_id, data={"n": n}, now=T0)
    assert delivery.deliver_due(now=T0) == 60
    assert calls["lane"] == 0 and len(receiver.requests) == 60


def test_a_lane_claims_nothing_its_webhook_has_in_flight_elsewhere(caller, hook, receiver):
    for n in range(60):
        raise_event(caller.workspace_id, data={"n": n}, now=T0)
    first = claims.claim_due(now=T0)  # another process sends the first 50
    assert claims.claim_next(hook["id"], False, now=T0) == []
    claims.release(first)
    nexts = claims.claim_next(hook["id"], False, now=T0)
    assert [item.id for item in nexts] == [row.id for row in deliveries_of(hook["id"])][:50]
    assert claims.claim_next(hook["id"], False, now=T0) == []  # in flight: its own, now
    assert claims.claim_next(hook["id"], False, now=at(61)) != []  # its lease expired


def test_a_lane_claims_nothing_for_a_deactivated_webhook(caller, hook, receiver):
    raise_event(caller.workspace_id, now=T0)
    Webhook.update(is_active=False).where(Webhook.id == hook["id"]).execute()
    assert claims.claim_next(hook["id"], False, now=T0) == []


def test_webhooks_are_served_in_parallel_but_each_in_order(caller, receiver):
    second = Receiver()
    try:
        hooks = [register(caller, receiver.url), register(caller, second.url)]
        events = [raise_event(caller.workspace_id, data={"n": n}, now=T0) for n in range(8)]
        assert delivery.deliver_due(now=T0) == 16
        for server in (receiver, second):
            assert [envelope_of(r)["event_id"] for r in server.requests] == [e.id for e in events]
        assert {envelope_of(r)["webhook_id"] for r in second.requests} == {hooks[1]["id"]}
    finally:
        second.close()


# --- retention ---------------------------------------------------------------------


def test_old_finished_deliveries_are_pruned(app, caller, hook, receiver):
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)
    receiver.default = Reply(500)
    raise_event(caller.workspace_id, now=at(1))
    delivery.deliver_due(now=at(1))  # pending, waiting for its retry
    assert delivery.prune_deliveries(now=T0 + timedelta(days=29)) == 0
    assert delivery.prune_deliveries(now=T0 + timedelta(days=31)) == 1
    (left,) = deliveries_of(hook["id"])
    assert left.status == "pending"
    assert DeliveryAttempt.select().count() == 1  # the pruned delivery's attempts went too


def test_concurrent_claims_never_share_a_delivery(caller, receiver):
    import threading

    from agent_platform.db import database

    hooks = [register(caller, f"{receiver.url}/{n}") for n in range(10)]
    for _ in range(10):
        raise_event(caller.workspace_id, now=T0)
    settings = delivery_settings.current_settings()
    results, barrier = [], threading.Barrier(4)

    def claim():
        barrier.wait()
        try:
            results.append(claims.claim_due(now=T0, settings=settings))
        finally:
            database.close()

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [item.id for batch in results for item in batch]
    assert len(claimed) == len(set(claimed)) == 100
    owners = {item.webhook_id: item.claim_token for batch in results for item in batch}
    assert len(owners) == len(hooks)  # each webhook went to exactly one claimer
    assert claims.claim_due(now=T0, settings=settings) == []


def test_the_lease_is_renewed_while_a_slow_batch_is_sent(app, caller, hook, receiver):
    import threading

    app.config.update(WEBHOOKS_LEASE_SECONDS=2, WEBHOOKS_TIMEOUT_SECONDS=1)
    receiver.default = Reply(200, delay=0.5)
    for _ in range(5):
        raise_event(caller.workspace_id)

    def run():
        with app.app_context():
            delivery.deliver_due()

    worker = threading.Thread(target=run)
    worker.start()
    try:
        threading.Event().wait(2.2)  # past the first lease: a real-time lease, no clock to drive
        assert claims.claim_due() == []
    finally:
        worker.join()
    assert len(receiver.requests) == 5
    assert {row.status for row in deliveries_of(hook["id"])} == {"succeeded"}


def test_failed_attempts_are_logged_with_their_ids_and_reason(app, other, caller, receiver, caplog):
    # Another workspace (made first, so its id sorts first) has a webhook too.
    register(other, receiver.url)
    hook = register(caller, receiver.url)
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = [5]
    receiver.default = Reply(503, body=b"busy")
    raise_event(caller.workspace_id, now=T0)
    delivery.deliver_due(now=T0)
    delivery.deliver_due(now=at(5))
    logged = [r for r in caplog.records if r.name == "agent_platform.webhooks"]
    assert [r.levelname for r in logged[:2]] == ["WARNING", "ERROR"]
    (row,) = deliveries_of(hook["id"])
    for record, number in zip(logged, (1, 2), strict=False):
        assert (record.workspace_id, record.webhook_id) == (caller.workspace_id, hook["id"])
        assert (record.delivery_id, record.event_id) == (row.id, row.event_id)
        assert (record.attempt, record.http_status) == (number, 503)
        assert record.reason == "HTTP 503 Service Unavailable"
    assert logged[1].getMessage() == (
        f"webhook {hook['id']} delivery {row.id} (event {row.event_id}) attempt 2 failed: "
        "HTTP 503 Service Unavailable"
    )
