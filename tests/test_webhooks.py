"""Webhooks through the API: registration, validation, SSRF, secrets, test,
the delivery log, redelivery and recovery, isolation and scopes."""

from datetime import timedelta

import pytest
import standardwebhooks

from agent_platform import netguard
from agent_platform.events import delivery
from agent_platform.models.base import utcnow
from agent_platform.models.webhooks import Webhook
from conftest import assert_error
from webhooks_helpers import Receiver, Reply, raise_event, register

WEBHOOK_FIELDS = {
    "id",
    "agent_id",
    "url",
    "events",
    "description",
    "is_active",
    "status",
    "consecutive_failures",
    "last_success_at",
    "last_failure_at",
    "previous_secret_expires_at",
    "created_at",
    "updated_at",
}


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
    return register(caller, receiver.url, ["contacts", "message.received"], description="CRM")


def test_create_returns_the_secret_once(caller, hook):
    assert set(hook) == WEBHOOK_FIELDS | {"secret"}
    assert hook["secret"].startswith("whsec_")
    assert hook["events"] == ["contacts", "message.received"]
    assert (hook["is_active"], hook["status"], hook["consecutive_failures"]) == (True, "active", 0)
    assert hook["created_at"].endswith("Z")
    fetched = caller.get(f"/v1/webhooks/{hook['id']}").get_json()["data"]
    assert set(fetched) == WEBHOOK_FIELDS
    listed = caller.get("/v1/webhooks").get_json()
    assert [item["id"] for item in listed["data"]] == [hook["id"]]
    assert "secret" not in listed["data"][0]
    assert listed["pagination"]["total"] == 1 and listed["meta"]["total"] == 1


def test_events_must_be_known_names_categories_or_star(caller, receiver):
    response = caller.post(
        "/v1/webhooks",
        json={"url": receiver.url, "events": ["message.received", "mesage.sent", "nope"]},
    )
    error = assert_error(response, 400, "VALIDATION_ERROR", "events")
    assert "mesage.sent" in error["message"] and "nope" in error["message"]
    assert "message.received" not in error["message"].split("names:")[1].split("(")[0]
    for events in (["*"], ["billing", "agent"], ["appointment.cancelled"]):
        assert register(caller, f"{receiver.url}/{events[0]}", events)["events"] == events
    assert_error(
        caller.post("/v1/webhooks", json={"url": receiver.url, "events": []}),
        400,
        "VALIDATION_ERROR",
        "events",
    )
    assert_error(
        caller.post("/v1/webhooks", json={"url": receiver.url}),
        400,
        "MISSING_REQUIRED_FIELD",
        "events",
    )
    assert_error(
        caller.post("/v1/webhooks", json={"url": receiver.url, "events": ["*"], "secret": "x"}),
        400,
        "VALIDATION_ERROR",
        "secret",
    )


def test_the_same_url_twice_is_409(caller, other, hook, receiver):
    response = caller.post("/v1/webhooks", json={"url": receiver.url, "events": ["*"]})
    assert_error(response, 409, "DUPLICATE_WEBHOOK_URL", receiver.url)
    second = register(caller, receiver.url + "/2")
    response = caller.patch(f"/v1/webhooks/{second['id']}", json={"url": receiver.url})
    assert_error(response, 409, "DUPLICATE_WEBHOOK_URL")
    # Another workspace may register the same URL.
    assert register(other, receiver.url)["url"] == receiver.url


def test_update_and_delete(caller, hook, receiver):
    response = caller.patch(
        f"/v1/webhooks/{hook['id']}",
        json={"events": ["*"], "description": "all", "url": receiver.url + "/new"},
    )
    assert response.status_code == 200
    updated = response.get_json()["data"]
    assert (updated["events"], updated["description"]) == (["*"], "all")
    assert updated["url"].endswith("/new") and "secret" not in updated
    off = caller.patch(f"/v1/webhooks/{hook['id']}", json={"is_active": False}).get_json()["data"]
    assert (off["is_active"], off["status"]) == (False, "deactivated")
    on = caller.patch(f"/v1/webhooks/{hook['id']}", json={"is_active": True}).get_json()["data"]
    assert (on["is_active"], on["status"]) == (True, "active")
    assert_error(
        caller.patch(f"/v1/webhooks/{hook['id']}", json={"status": "active"}),
        400,
        "VALIDATION_ERROR",
        "status",
    )
    raise_event(caller.workspace_id)
    assert caller.delete(f"/v1/webhooks/{hook['id']}").status_code == 204
    assert_error(caller.get(f"/v1/webhooks/{hook['id']}"), 404, "WEBHOOK_NOT_FOUND")
    assert_error(caller.delete(f"/v1/webhooks/{hook['id']}"), 404, "WEBHOOK_NOT_FOUND")


def test_list_filters(caller, receiver):
    register(caller, receiver.url + "/a")
    off = register(caller, receiver.url + "/b", is_active=False)
    listed = caller.get("/v1/webhooks?status=deactivated").get_json()["data"]
    assert [item["id"] for item in listed] == [off["id"]]
    assert len(caller.get("/v1/webhooks?is_active=true").get_json()["data"]) == 1
    assert_error(caller.get("/v1/webhooks?status=sleepy"), 400, "VALIDATION_ERROR", "status")
    assert_error(caller.get("/v1/webhooks?colour=red"), 400, "VALIDATION_ERROR", "colour")


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://127.0.0.1/hook", "loopback"),
        ("http://localhost/hook", "loopback"),
        ("http://10.0.0.5/hook", "private"),
        ("http://192.168.0.10/hook", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://100.64.0.1/", "carrier-grade NAT"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://[::1]/hook", "loopback"),
        ("http://[fd00::1]/hook", "private"),
        ("http://[fe80::1]/hook", "link-local"),
        ("http://[::ffff:127.0.0.1]/hook", "IPv4-mapped"),
        ("http://2130706433/hook", "canonical"),
        ("http://127.1/hook", "canonical"),
        ("http://internal.example.test/hook", "private"),
        ("http://93.184.216.34:22/hook", "port 22"),
        ("ftp://93.184.216.34/hook", "http and https"),
        ("not a url", "spaces"),
    ],
)
def test_registration_refuses_unsafe_urls(app, caller, monkeypatch, url, reason):
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = False
    app.config["WEBHOOKS_ALLOWED_PORTS"] = [80, 443, 8080, 8443]
    real_resolve = netguard.resolve

    def resolve(host, port):
        return ["10.1.2.3"] if host.endswith(".example.test") else real_resolve(host, port)

    monkeypatch.setattr(netguard, "resolve", resolve)
    response = caller.post("/v1/webhooks", json={"url": url, "events": ["*"]})
    assert_error(response, 400, "VALIDATION_ERROR", "url")
    assert reason in response.get_json()["error"]["message"]
    assert Webhook.select().count() == 0


def test_registration_accepts_public_targets(app, caller):
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = False
    app.config["WEBHOOKS_ALLOWED_PORTS"] = [80, 443, 8080, 8443]
    assert register(caller, "https://93.184.216.34/hooks")["status"] == "active"


def test_rotate_secret(caller, hook, receiver):
    response = caller.post(f"/v1/webhooks/{hook['id']}/rotate-secret")
    assert response.status_code == 200
    rotated = response.get_json()["data"]
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != hook["secret"]
    assert rotated["previous_secret_expires_at"] > utcnow().isoformat()
    raise_event(caller.workspace_id)
    delivery.deliver_due()
    (got,) = receiver.requests
    for secret in (hook["secret"], rotated["secret"]):  # both verify during the grace period
        assert standardwebhooks.Webhook(secret).verify(got.body, got.headers)["event_id"]


def test_test_endpoint_sends_a_signed_test_event(caller, hook, receiver):
    response = caller.post(f"/v1/webhooks/{hook['id']}/test")
    assert response.status_code == 200
    result = response.get_json()["data"]
    assert (result["success"], result["http_status"], result["error"]) == (True, 200, None)
    assert result["response_time_ms"] >= 0
    (got,) = receiver.requests
    body = standardwebhooks.Webhook(hook["secret"]).verify(got.body, got.headers)
    assert body["event"] == "webhook.test" and body["event_id"] == result["event_id"]
    assert body["webhook_id"] == hook["id"] and body["data"]["message"]
    assert caller.get(f"/v1/webhooks/{hook['id']}/deliveries").get_json()["data"] == []


def test_a_failed_test_is_reported_and_not_counted(app, caller, hook, receiver):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = []
    receiver.default = Reply(500, body=b"broken")
    for _ in range(3):
        result = caller.post(f"/v1/webhooks/{hook['id']}/test").get_json()["data"]
    assert (result["success"], result["http_status"]) == (False, 500)
    assert result["error"].startswith("HTTP 500") and result["response_body"] == "broken"
    webhook = caller.get(f"/v1/webhooks/{hook['id']}").get_json()["data"]
    assert (webhook["status"], webhook["consecutive_failures"]) == ("active", 0)


def test_test_endpoint_goes_through_the_ssrf_guard(app, caller, hook, receiver):
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = False
    result = caller.post(f"/v1/webhooks/{hook['id']}/test").get_json()["data"]
    assert result["success"] is False and "loopback" in result["error"]
    assert receiver.requests == []


def test_deliveries_log_with_attempts_and_filters(app, caller, hook, receiver):
    receiver.reply(Reply(500, body=b"x" * 3000))
    first = raise_event(caller.workspace_id, "contact.created")
    second = raise_event(caller.workspace_id, "message.received")
    delivery.deliver_due()
    response = caller.get(f"/v1/webhooks/{hook['id']}/deliveries?order=asc")
    assert response.status_code == 200
    body = response.get_json()
    assert body["pagination"]["total"] == 2
    failed, succeeded = body["data"]
    assert (failed["event"], failed["event_id"], failed["status"]) == (
        "contact.created",
        first.id,
        "pending",
    )
    assert failed["next_attempt_at"].endswith("Z")
    (attempt,) = failed["attempts"]
    assert attempt["number"] == 1 and attempt["success"] is False
    assert attempt["http_status"] == 500 and attempt["error"].startswith("HTTP 500")
    assert len(attempt["response_body"]) == 1024 and attempt["response_time_ms"] >= 0
    assert (succeeded["event_id"], succeeded["status"]) == (second.id, "succeeded")
    assert succeeded["attempts"][0]["http_status"] == 200
    only = caller.get(f"/v1/webhooks/{hook['id']}/deliveries?status=succeeded").get_json()
    assert [d["id"] for d in only["data"]] == [succeeded["id"]]
    by_event = caller.get(f"/v1/webhooks/{hook['id']}/deliveries?event=contact.created")
    assert [d["id"] for d in by_event.get_json()["data"]] == [failed["id"]]
    one = caller.get(f"/v1/webhooks/{hook['id']}/deliveries/{failed['id']}").get_json()["data"]
    assert one == failed
    assert_error(
        caller.get(f"/v1/webhooks/{hook['id']}/deliveries?status=lost"),
        400,
        "VALIDATION_ERROR",
        "status",
    )


def test_redeliver_sends_the_same_event_again(caller, hook, receiver):
    event = raise_event(caller.workspace_id)
    delivery.deliver_due()
    (row,) = caller.get(f"/v1/webhooks/{hook['id']}/deliveries").get_json()["data"]
    response = caller.post(f"/v1/webhooks/{hook['id']}/deliveries/{row['id']}/redeliver")
    assert response.status_code == 202
    assert response.get_json()["data"]["status"] == "pending"
    delivery.deliver_due()
    first, again = receiver.requests
    assert first.body == again.body and event.id in again.body.decode()
    (row,) = caller.get(f"/v1/webhooks/{hook['id']}/deliveries").get_json()["data"]
    assert row["status"] == "succeeded" and [a["number"] for a in row["attempts"]] == [1, 2]
    assert_error(
        caller.post(f"/v1/webhooks/{hook['id']}/deliveries/{hook['id']}/redeliver"),
        404,
        "DELIVERY_NOT_FOUND",
    )
    assert_error(
        caller.post(f"/v1/webhooks/{hook['id']}/deliveries/not-a-uuid/redeliver"),
        404,
        "DELIVERY_NOT_FOUND",
    )


def test_recover_redelivers_failed_deliveries_since_a_time(app, caller, hook, receiver):
    app.config["WEBHOOKS_RETRY_SCHEDULE"] = []
    receiver.default = Reply(500)
    start = utcnow()
    old = raise_event(caller.workspace_id, now=start - timedelta(hours=2))
    recent = [raise_event(caller.workspace_id, now=start) for _ in range(2)]
    delivery.deliver_due()
    statuses = caller.get(f"/v1/webhooks/{hook['id']}/deliveries?status=failed").get_json()
    assert statuses["pagination"]["total"] == 3
    receiver.default = Reply(200)
    since = (start - timedelta(minutes=1)).isoformat() + "Z"
    response = caller.post(f"/v1/webhooks/{hook['id']}/recover", query_string={"since": since})
    assert response.status_code == 202
    assert response.get_json()["data"]["redelivered"] == 2
    delivery.deliver_due()
    received = [r.body.decode() for r in receiver.requests[3:]]
    assert sorted(any(e.id in body for body in received) for e in recent) == [True, True]
    assert not any(old.id in body for body in received)
    assert_error(
        caller.post(f"/v1/webhooks/{hook['id']}/recover"), 400, "MISSING_REQUIRED_FIELD", "since"
    )


def test_other_workspaces_see_nothing(caller, other, hook):
    raise_event(caller.workspace_id)
    rows = caller.get(f"/v1/webhooks/{hook['id']}/deliveries").get_json()["data"]
    base = f"/v1/webhooks/{hook['id']}"
    for method, path in [
        ("GET", base),
        ("PATCH", base),
        ("DELETE", base),
        ("POST", base + "/rotate-secret"),
        ("POST", base + "/test"),
        ("GET", base + "/deliveries"),
        ("GET", f"{base}/deliveries/{rows[0]['id']}"),
        ("POST", f"{base}/deliveries/{rows[0]['id']}/redeliver"),
        ("POST", base + "/recover?since=2020-01-01T00:00:00Z"),
    ]:
        body = {"is_active": False} if method == "PATCH" else None
        response = other.request(method, path, json=body)
        assert_error(response, 404, "WEBHOOK_NOT_FOUND")
    assert other.get("/v1/webhooks").get_json()["data"] == []
    assert caller.get(base).status_code == 200


def test_scopes(make_caller, caller, hook):
    reader = make_caller(scopes=["webhooks:read"], workspace_id=caller.workspace_id)
    writer = make_caller(scopes=["webhooks:write"], workspace_id=caller.workspace_id)
    assert reader.get(f"/v1/webhooks/{hook['id']}/deliveries").status_code == 200
    for response in (
        reader.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/x", "events": ["*"]}),
        reader.post(f"/v1/webhooks/{hook['id']}/test"),
        reader.post(f"/v1/webhooks/{hook['id']}/rotate-secret"),
    ):
        assert_error(response, 403, "INSUFFICIENT_SCOPE", "webhooks:write")
    assert_error(writer.get("/v1/webhooks"), 403, "INSUFFICIENT_SCOPE", "webhooks:read")
    assert_error(
        writer.delete(f"/v1/webhooks/{hook['id']}"), 403, "INSUFFICIENT_SCOPE", "webhooks:delete"
    )
    deleter = make_caller(scopes=["webhooks:delete"], workspace_id=caller.workspace_id)
    assert deleter.delete(f"/v1/webhooks/{hook['id']}").status_code == 204
