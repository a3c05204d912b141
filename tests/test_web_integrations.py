"""The admins' webhook and API key pages at /app/webhooks and /app/keys:
creating (the secret and the key shown exactly once), the delivery log,
redelivery, the test event, disabling and deleting, revoking with the minted
keys; the API's refusals in words; the agent role 403; another workspace's
webhook or key 404."""

import re
from datetime import timedelta

import pytest
from werkzeug.datastructures import MultiDict

from agent_platform.models import ApiKey
from agent_platform.models.base import utcnow
from agent_platform.models.webhooks import Delivery, Webhook
from agent_platform.services import keys
from web_helpers import make_user, page_token, sign_in, text
from webhooks_helpers import Receiver, Reply, raise_event, register


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
def admin(client, caller):
    make_user(caller.workspace_id)
    sign_in(client)
    return caller


def post(client, path, form=(), **fields):
    """A form post with the page's CSRF token; `form` may repeat names."""
    data = [("csrf_token", page_token(client, "/app/webhooks")), *form, *fields.items()]
    return client.post(path, data=MultiDict(data))


def shown(response, element_id):
    found = re.search(rf'id="{element_id}" type="text" readonly value="([^"]+)"', text(response))
    return found.group(1) if found else None


def add_webhook(client, url, *events):
    return post(client, "/app/webhooks", [("events", name) for name in events], url=url)


# --- Webhooks ---------------------------------------------------------------


def test_the_webhooks_page_offers_every_category_and_event_of_the_catalog(client, admin):
    page = text(client.get("/app/webhooks"))
    for value in ("*", "messages", "message.received", "billing", "trial.expired"):
        assert f'name="events" value="{value}"' in page
    assert "No webhook yet" in page


def test_adding_a_webhook_shows_its_secret_once(client, admin, receiver):
    response = add_webhook(client, receiver.url, "contacts", "message.received")
    assert response.status_code == 201
    secret = shown(response, "webhook-secret")
    webhook = Webhook.get()
    assert secret == webhook.secret and secret.startswith("whsec_")
    assert webhook.events == ["contacts", "message.received"]
    assert webhook.workspace_id == admin.workspace_id
    for path in ("/app/webhooks", f"/app/webhooks/{webhook.id}"):
        page = text(client.get(path))
        assert receiver.url in page and secret not in page


def test_webhook_refusals_are_the_apis_in_words_and_change_nothing(client, admin, receiver):
    none = add_webhook(client, receiver.url)
    assert none.status_code == 400 and "choose at least one event" in text(none)
    assert f'value="{receiver.url}"' in text(none)  # what was typed is kept
    unknown = add_webhook(client, receiver.url, "message.exploded")
    assert unknown.status_code == 400 and "unknown event or category names" in text(unknown)
    scheme = add_webhook(client, "ftp://example.com/hook", "messages")
    assert scheme.status_code == 400 and "refused" in text(scheme)
    empty = add_webhook(client, "", "messages")
    assert empty.status_code == 400 and "url" in text(empty)
    assert Webhook.select().count() == 0
    add_webhook(client, receiver.url, "messages")
    twice = add_webhook(client, receiver.url, "contacts")
    assert twice.status_code == 409 and "already registered" in text(twice)
    assert Webhook.select().count() == 1


def test_private_targets_are_refused_as_the_api_refuses_them(client, caller, app):
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = False
    make_user(caller.workspace_id)
    sign_in(client)
    refused = add_webhook(client, "http://127.0.0.1:8080/hook", "messages")
    assert refused.status_code == 400 and "refused" in text(refused)
    assert Webhook.select().count() == 0


def test_the_delivery_log_shows_each_attempts_status_answer_and_time(client, admin, receiver):
    from agent_platform.events import delivery

    receiver.reply(Reply(status=500, body=b"database down"), Reply(status=200, body=b"thanks"))
    webhook = register(admin, receiver.url, events=["contacts"])
    raise_event(admin.workspace_id, "contact.created")
    delivery.deliver_due()
    delivery.deliver_due(now=utcnow() + timedelta(hours=1))  # the retry is due
    page = text(client.get(f"/app/webhooks/{webhook['id']}"))
    assert "contact.created" in page and "succeeded" in page
    assert "500 (failed)" in page and "database down" in page
    assert "200" in page and "thanks" in page
    assert page.count("<time datetime=") >= 3


def test_redeliver_schedules_the_delivery_again(client, admin, receiver):
    webhook = register(admin, receiver.url, events=["contacts"])
    raise_event(admin.workspace_id, "contact.created")
    sent = Delivery.get()
    sent.status = "failed"
    sent.next_attempt_at = None
    sent.save()
    response = post(client, f"/app/webhooks/{webhook['id']}/deliveries/{sent.id}/redeliver")
    assert response.status_code == 200 and "scheduled again" in text(response)
    again = Delivery.get()
    assert again.status == "pending" and again.next_attempt_at is not None


def test_a_test_event_is_sent_and_its_outcome_shown(client, admin, receiver):
    receiver.reply(Reply(status=418, body=b"<b>teapot</b>"))
    webhook = register(admin, receiver.url, events=["messages"])
    response = post(client, f"/app/webhooks/{webhook['id']}/test")
    assert response.status_code == 200
    page = text(response)
    assert "Test event failed" in page and "418" in page
    assert "&lt;b&gt;teapot&lt;/b&gt;" in page and "<b>teapot</b>" not in page
    assert b"webhook.test" in receiver.requests[-1].body
    assert webhook["secret"] not in page


def test_disable_reactivate_and_delete(client, admin, receiver):
    webhook = register(admin, receiver.url, events=["messages"])
    path = f"/app/webhooks/{webhook['id']}"
    disabled = post(client, f"{path}/active", active="false")
    assert disabled.status_code == 303 and disabled.location.endswith(path)
    assert Webhook.get().is_active is False and "Reactivate" in text(client.get(path))
    post(client, f"{path}/active", active="true")
    assert Webhook.get().is_active is True
    odd = post(client, f"{path}/active", active="maybe")
    assert odd.status_code == 400 and "active" in text(odd) and Webhook.get().is_active is True
    deleted = post(client, f"{path}/delete")
    assert deleted.status_code == 303 and deleted.location.endswith("/app/webhooks")
    assert Webhook.select().count() == 0
    assert client.get(path).status_code == 404


def test_another_workspaces_webhook_is_404(client, admin, other, receiver):
    theirs = register(other, receiver.url, events=["messages"])
    raise_event(other.workspace_id, "message.received")
    delivery_id = Delivery.get().id
    path = f"/app/webhooks/{theirs['id']}"
    assert client.get(path).status_code == 404
    assert receiver.url not in text(client.get("/app/webhooks"))
    for action in ("test", "active", "delete", f"deliveries/{delivery_id}/redeliver"):
        assert post(client, f"{path}/{action}", active="false").status_code == 404
    assert Webhook.get().is_active is True and receiver.requests == []
    assert client.get("/app/webhooks/not-a-uuid").status_code == 404


# --- API keys ---------------------------------------------------------------


def key_form(name, *scopes):
    return [("name", name), *(("scopes", scope) for scope in scopes)]


def test_the_keys_page_groups_the_scopes_by_resource(client, admin):
    page = text(client.get("/app/keys"))
    assert "<legend>webhooks</legend>" in page
    for scope in ("webhooks:read", "webhooks:write", "users:write"):
        assert f'name="scopes" value="{scope}"' in page
    assert "test key" in page  # the caller's own key is listed


def test_making_a_key_shows_it_once_and_it_works(client, admin):
    response = post(client, "/app/keys", key_form("CRM sync", "contacts:read", "webhooks:read"))
    assert response.status_code == 201
    raw_key = shown(response, "new-key")
    made = ApiKey.get(ApiKey.name == "CRM sync")
    assert list(made.scopes) == ["contacts:read", "webhooks:read"] and made.parent_id is None
    assert raw_key.startswith(f"apk_{made.lookup_id}_")
    assert client.get("/v1/contacts", headers={"x-api-key": raw_key}).status_code == 200
    assert client.get("/v1/agents", headers={"x-api-key": raw_key}).status_code == 403
    page = text(client.get("/app/keys"))
    assert raw_key not in page and f"apk_{made.lookup_id}_…" in page
    assert "contacts:read, webhooks:read" in page


def test_key_refusals_are_in_words_and_change_nothing(client, admin):
    before = ApiKey.select().count()
    none = post(client, "/app/keys", key_form("No scopes"))
    assert none.status_code == 400 and "at least one scope is required" in text(none)
    assert 'value="No scopes"' in text(none)
    unknown = post(client, "/app/keys", key_form("Odd", "agents:fly"))
    assert unknown.status_code == 400 and "unknown scopes: agents:fly" in text(unknown)
    unnamed = post(client, "/app/keys", key_form("", "agents:read"))
    assert unnamed.status_code == 400 and "name" in text(unnamed)
    assert ApiKey.select().count() == before


def test_revoking_a_key_revokes_the_keys_minted_from_it(client, admin):
    root, _ = keys.create_key(admin.workspace_id, "Parent", ["contacts:read"])
    child, child_raw = keys.create_key(admin.workspace_id, "Child", ["contacts:read"], parent=root)
    assert "Parent" in text(client.get("/app/keys"))  # the child's "minted by"
    response = post(client, f"/app/keys/{root.id}/revoke")
    assert response.status_code == 200
    assert "The key Parent is revoked, with 1 key(s) minted from it." in text(response)
    assert ApiKey.get_by_id(child.id).is_revoked
    assert client.get("/v1/contacts", headers={"x-api-key": child_raw}).status_code == 401
    assert ApiKey.get_by_id(admin_key_id(admin)).is_revoked is False


def admin_key_id(caller):
    return ApiKey.get(ApiKey.name == "test key", ApiKey.workspace == caller.workspace_id).id


def test_another_workspaces_key_is_404(client, admin, other):
    theirs = admin_key_id(other)
    assert post(client, f"/app/keys/{theirs}/revoke").status_code == 404
    assert post(client, "/app/keys/not-a-uuid/revoke").status_code == 404
    assert ApiKey.get_by_id(theirs).is_revoked is False
    assert str(theirs) not in text(client.get("/app/keys"))


# --- Who may --------------------------------------------------------------------


def test_the_agent_role_is_refused_every_page_and_action(client, caller, receiver):
    webhook = register(caller, receiver.url, events=["messages"])
    make_user(caller.workspace_id, role="agent")
    sign_in(client)
    token = page_token(client, "/app")
    for path in ("/app/webhooks", f"/app/webhooks/{webhook['id']}", "/app/keys"):
        assert client.get(path).status_code == 403
    for path in ("/app/webhooks", f"/app/webhooks/{webhook['id']}/delete", "/app/keys"):
        response = client.post(path, data={"csrf_token": token, "name": "x", "url": receiver.url})
        assert response.status_code == 403
    assert Webhook.select().count() == 1 and "Webhooks &amp; keys" not in text(client.get("/app"))


def test_signed_out_is_sent_to_sign_in(client, caller):
    response = client.get("/app/keys")
    assert response.status_code == 302 and "/app/sign-in" in response.location


def test_the_nav_links_the_area_for_admins(client, admin):
    assert 'href="/app/webhooks"' in text(client.get("/app"))
