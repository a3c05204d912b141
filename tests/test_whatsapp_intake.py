"""The WhatsApp callback URL: subscription check, signatures over the raw
bytes, unknown channels, the per-channel bound, malformed bodies."""

import io
import json
import re

import pytest

from agent_platform.models import ChannelEvent, Contact, Message
from conftest import ON_POSTGRESQL, assert_error
from conversations_helpers import WA_SETTINGS, data, event_names, make_channel
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import APP_SECRET, messages_payload, post, sign, text

CHALLENGE = "1158201444"


def verify(client, channel_id, **params):
    query = {"hub.mode": "subscribe", "hub.verify_token": "verify-token-value"}
    query["hub.challenge"] = CHALLENGE
    query.update(params)
    query = {name: value for name, value in query.items() if value is not None}
    return client.get(f"/inbound/whatsapp/{channel_id}", query_string=query)


def nothing_stored():
    return Message.select().count() == 0 and Contact.select().count() == 0


def test_the_subscription_check_answers_the_exact_challenge(client, channel):
    response = verify(client, channel["id"], **{"hub.challenge": "ch4ll3nge-ÿ&x=1"})
    assert response.status_code == 200
    assert response.get_data(as_text=True) == "ch4ll3nge-ÿ&x=1"
    assert response.mimetype == "text/plain"
    plain = verify(client, channel["id"])
    assert (plain.status_code, plain.get_data()) == (200, CHALLENGE.encode())


@pytest.mark.parametrize(
    "params",
    [
        {"hub.verify_token": "wrong"},
        {"hub.verify_token": None},
        {"hub.verify_token": ""},
        {"hub.mode": "unsubscribe"},
        {"hub.mode": None},
        {"hub.challenge": None},
    ],
)
def test_a_wrong_subscription_check_is_403(client, channel, params):
    response = verify(client, channel["id"], **params)
    assert_error(response, 403, "VERIFICATION_FAILED")
    assert CHALLENGE not in response.get_data(as_text=True)


def test_a_channel_without_verify_token_never_verifies(client, caller):
    bare = make_channel(caller, name="No token")
    assert_error(verify(client, bare["id"], **{"hub.verify_token": ""}), 403, "VERIFICATION_FAILED")


def test_unknown_channels_are_404(client, caller, channel):
    telegram = make_channel(caller, name="Telegram", type="telegram")
    for channel_id in ("6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88", "not-a-uuid", telegram["id"]):
        assert_error(verify(client, channel_id), 404, "CHANNEL_NOT_FOUND")
        assert_error(post(client, channel_id, messages_payload(text())), 404, "CHANNEL_NOT_FOUND")
    assert caller.delete(f"/v1/channels/{channel['id']}").status_code == 204
    assert_error(verify(client, channel["id"]), 404, "CHANNEL_NOT_FOUND")
    assert_error(post(client, channel["id"], messages_payload(text())), 404, "CHANNEL_NOT_FOUND")
    assert nothing_stored()


def test_a_signed_message_is_stored(client, channel):
    response = post(client, channel["id"], messages_payload(text()))
    assert data(response) == {
        "messages": 1,
        "duplicates": 0,
        "statuses": 0,
        "reactions": 0,
        "notices": 0,
        "failed": 0,
    }
    assert Message.select().count() == 1


def test_a_wrong_signature_is_401_and_nothing_is_stored(client, channel, caller):
    before = event_names(caller.workspace_id)
    payload = messages_payload(text())
    body = json.dumps(payload).encode()
    cases = [
        ("sha256=" + "0" * 64, "INVALID_SIGNATURE"),
        (sign(body, "another-app-secret"), "INVALID_SIGNATURE"),
        (sign(body).upper(), "INVALID_SIGNATURE"),  # "SHA256=": not the header's form
        (sign(body)[:-2], "INVALID_SIGNATURE"),
        ("sha1=" + sign(body)[7:], "INVALID_SIGNATURE"),
        (sign(body + b" "), "INVALID_SIGNATURE"),
        ("sha256=ﬀ" + sign(body)[8:], "INVALID_SIGNATURE"),
    ]
    for signature, code in cases:
        assert_error(post(client, channel["id"], payload, signature=signature), 401, code)
    assert_error(post(client, channel["id"], payload, signature=""), 401, "MISSING_SIGNATURE")
    assert nothing_stored()
    assert event_names(caller.workspace_id) == before


def test_the_signature_is_over_the_raw_bytes_not_the_json(client, channel):
    payload = messages_payload(text("Olá, çà"))
    raw = json.dumps(payload, indent=1, ensure_ascii=False).encode()
    reserialised = json.dumps(json.loads(raw)).encode()
    assert raw != reserialised and json.loads(raw) == json.loads(reserialised)
    # Signed over the bytes as sent: accepted.
    assert post(client, channel["id"], None, raw=raw).status_code == 200
    Message.delete().execute()
    # The same document, signed over another serialisation of it: refused.
    signed_elsewhere = sign(reserialised)
    response = post(client, channel["id"], None, raw=raw, signature=signed_elsewhere)
    assert_error(response, 401, "INVALID_SIGNATURE")
    assert Message.select().count() == 0


def test_a_channel_without_app_secret_refuses_everything(client, caller, channel):
    cleared = caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"app_secret": None}})
    assert cleared.status_code == 200
    for secret in (APP_SECRET, ""):
        response = post(client, channel["id"], messages_payload(text()), secret=secret or "x")
        assert_error(response, 401, "INVALID_SIGNATURE", "app_secret")
    assert nothing_stored()


def test_a_signed_body_that_is_not_json_is_400(client, channel):
    response = post(client, channel["id"], None, raw=b"{not json")
    assert_error(response, 400, "VALIDATION_ERROR", "body")
    assert nothing_stored()


def test_a_signed_payload_without_entries_is_logged_as_a_channel_error(client, caller, channel):
    counts = data(post(client, channel["id"], {"object": "whatsapp_business_account"}))
    assert counts["notices"] == 1
    event = ChannelEvent.get()
    assert (event.kind, event.is_error) == ("malformed", True)
    assert "channel.error" in event_names(caller.workspace_id)


def test_the_bound_is_per_channel_and_counts_signed_requests_only(app, client, caller, channel):
    app.config["INBOUND_MAX_REQUESTS_PER_MINUTE"] = 3  # read when the first POST arrives
    second = make_channel(caller, name="Two", settings=dict(WA_SETTINGS))
    for _ in range(5):  # unsigned requests are refused before they count
        post(client, channel["id"], messages_payload(text()), signature="sha256=00")
    for number in range(3):
        payload = messages_payload(text(wamid=f"wamid.{number}"))
        assert post(client, channel["id"], payload).status_code == 200
    refused = post(client, channel["id"], messages_payload(text(wamid="wamid.9")))
    assert_error(refused, 429, "RATE_LIMIT_EXCEEDED")
    assert int(refused.headers["Retry-After"]) >= 1
    assert post(client, second["id"], messages_payload(text(wamid="wamid.9"))).status_code == 200
    assert Message.select().count() == 4


def signed_post(client, channel_id, payload, headers=(), **options):
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "X-Hub-Signature-256": sign(body),
        **dict(headers),
    }
    return client.post(f"/inbound/whatsapp/{channel_id}", data=body, headers=headers, **options)


def test_a_stored_post_answers_with_its_request_id(client, channel):
    payload = messages_payload(text(wamid="wamid.given"))
    given = signed_post(client, channel["id"], payload, headers={"X-Request-ID": "req-42.a_b"})
    assert (given.status_code, given.mimetype) == (200, "application/json")
    assert given.headers["X-Request-ID"] == "req-42.a_b"
    for number, headers in enumerate(({}, {"X-Request-ID": "not valid!"})):
        payload = messages_payload(text(wamid=f"wamid.made.{number}"))
        made = signed_post(client, channel["id"], payload, headers=headers)
        assert data(made)["messages"] == 1
        assert re.fullmatch("[0-9a-f]{32}", made.headers["X-Request-ID"])
    assert Message.select().count() == 3


def test_posts_of_unknown_length_over_the_limit_or_elsewhere_are_answered_by_flask(
    app, client, channel
):
    # A chunked body (no Content-Length) is stored all the same.
    body = json.dumps(messages_payload(text(wamid="wamid.chunked"))).encode()
    chunked = client.post(
        f"/inbound/whatsapp/{channel['id']}",
        input_stream=io.BytesIO(body),
        headers={"Transfer-Encoding": "chunked", "X-Hub-Signature-256": sign(body)},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert data(chunked)["messages"] == 1 and chunked.headers["X-Request-ID"]
    app.config["LIMITS_MAX_BODY_BYTES"] = 100
    too_large = signed_post(client, channel["id"], messages_payload(text(wamid="wamid.big")))
    assert_error(too_large, 413, "PAYLOAD_TOO_LARGE")
    app.config["LIMITS_MAX_BODY_BYTES"] = 10**6
    slash = signed_post(client, channel["id"] + "/", messages_payload(text(wamid="wamid.slash")))
    assert_error(slash, 404, "NOT_FOUND")
    assert Message.select().count() == 1


def test_a_post_the_fast_path_fails_is_run_again_by_the_route(monkeypatch, client, channel):
    from agent_platform.channels.whatsapp import intake

    real, calls = intake.receive, []

    def fails_once(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 1:
            raise RuntimeError("the COMMIT failed")  # nothing was stored
        return real(*args, **kwargs)

    monkeypatch.setattr(intake, "receive", fails_once)
    response = signed_post(client, channel["id"], messages_payload(text(wamid="wamid.again")))
    assert data(response)["messages"] == 1 and response.headers["X-Request-ID"]
    assert calls == [channel["id"], channel["id"]]
    assert Message.select().count() == 1


def test_a_stored_post_hands_its_connection_back_to_the_pool(client, channel):
    # Under the gevent worker an idle kept-alive connection is a greenlet
    # that may wait long: it must not hold one of the pool's connections.
    from agent_platform.db import database

    first = signed_post(client, channel["id"], messages_payload(text(wamid="wamid.kept.1")))
    assert database.is_closed() and not database._in_use
    second = signed_post(client, channel["id"], messages_payload(text(wamid="wamid.kept.2")))
    assert data(first)["messages"] == data(second)["messages"] == 1
    assert database.is_closed() and not database._in_use


def test_a_connection_left_in_a_transaction_goes_back_to_the_pool(monkeypatch, client, channel):
    from agent_platform.channels.whatsapp import intake
    from agent_platform.db import database

    real = intake.receive

    def leaves_a_transaction_open(*args, **kwargs):
        counts = real(*args, **kwargs)
        database.connection().execute("BEGIN" if ON_POSTGRESQL else "BEGIN IMMEDIATE")
        return counts

    monkeypatch.setattr(intake, "receive", leaves_a_transaction_open)
    response = signed_post(client, channel["id"], messages_payload(text(wamid="wamid.open")))
    assert data(response)["messages"] == 1
    assert database.is_closed()  # handed back, and rolled back by the pool
    assert not database.connection_in_transaction()
    assert Message.select().count() == 1


def test_a_message_failing_half_way_leaves_nothing_of_its_own(monkeypatch, client, channel):
    from agent_platform.models import Event
    from agent_platform.services import replies

    real = replies.schedule_reply

    def fails_for_the_second(conversation, message, now):
        if message.external_id == "wamid.second":  # after its message, count and event
            raise RuntimeError("the reply could not be scheduled")
        return real(conversation, message, now)

    monkeypatch.setattr(replies, "schedule_reply", fails_for_the_second)
    other = "5511988887777"
    payload = messages_payload(text(wamid="wamid.first"), text(wamid="wamid.second", sender=other))
    counts = data(signed_post(client, channel["id"], payload))
    assert (counts["messages"], counts["failed"]) == (1, 1)
    assert [message.external_id for message in Message.select()] == ["wamid.first"]
    assert Contact.select().count() == 1
    names = [event.name for event in Event.select().order_by(Event.created_at)]
    assert names.count("message.received") == 1 and names.count("contact.created") == 1
    failure = ChannelEvent.get(ChannelEvent.kind == "item_failed")
    assert "the reply could not be scheduled" in failure.payload["reason"]
