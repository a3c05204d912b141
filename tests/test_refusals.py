"""A URL the address guard refuses is refused with the setting that would
allow it named (and its environment variable), wherever the URL is given or
used: webhooks (registration, test, every attempt), URL trainings, and
intentions' URLs (written and called). Setting what the message names lets
the URL through. The guard's defaults hold here: private addresses refused,
ports 80, 443, 8080 and 8443 only."""

import json

import pytest

from agent_platform.events import delivery
from agent_platform.models import DeliveryAttempt, Message, Training, Webhook
from conftest import assert_error
from loopback import QuietHandler, serving
from replies_helpers import (
    add_qa,
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    make_agent,
    run_replies,
)
from webhooks_helpers import Receiver, raise_event, register

DEFAULT_PORTS = "80, 443, 8080, 8443"
PRIVATE = (
    "webhooks.allow_private_targets in the configuration "
    "(or AGENT_PLATFORM_WEBHOOKS_ALLOW_PRIVATE_TARGETS)"
)
PORTS = "webhooks.allowed_ports in the configuration (or AGENT_PLATFORM_WEBHOOKS_ALLOWED_PORTS)"
TRAININGS = (
    "trainings.allow_private_urls in the configuration "
    "(or AGENT_PLATFORM_TRAININGS_ALLOW_PRIVATE_URLS)"
)


class Ok(QuietHandler):
    def do_GET(self):
        self.reply(200, "text/plain", b"We open at nine.")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply(200, "application/json", b"{}")


def refusal(response):
    assert_error(response, 400, "VALIDATION_ERROR", "url")
    return response.get_json()["error"]["message"]


# --- webhooks ---------------------------------------------------------------------


def hook_body(url):
    return {"url": url, "events": ["*"]}


def test_a_webhook_on_loopback_names_the_setting_that_allows_it(app, caller):
    message = refusal(caller.post("/v1/webhooks", json=hook_body("http://127.0.0.1/hook")))
    assert message == (f"url: refused: 127.0.0.1 is a loopback address; to allow it, set {PRIVATE}")
    assert Webhook.select().count() == 0
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = True
    register(caller, "http://127.0.0.1/hook")


def test_a_webhook_on_another_port_names_the_ports_setting(app, caller):
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = True
    message = refusal(caller.post("/v1/webhooks", json=hook_body("http://127.0.0.1:5000/hook")))
    assert message == (
        "url: refused: port 5000 is not allowed (allowed: 80, 443, 8080, 8443); "
        f"to allow it, set {PORTS}"
    )
    app.config["WEBHOOKS_ALLOWED_PORTS"] = [5000]
    register(caller, "http://127.0.0.1:5000/hook")


def test_a_webhook_changed_to_loopback_names_the_setting(caller):
    hook = register(caller, "https://93.184.216.34/hook")
    response = caller.patch(f"/v1/webhooks/{hook['id']}", json={"url": "http://[::1]/hook"})
    assert refusal(response).endswith(f"to allow it, set {PRIVATE}")


def test_what_no_setting_allows_names_none(app, caller):
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = True
    app.config["WEBHOOKS_ALLOWED_PORTS"] = []
    message = refusal(caller.post("/v1/webhooks", json=hook_body("http://127.1/hook")))
    assert "not a canonical IPv4 address" in message and "to allow it" not in message


@pytest.fixture
def loopback_hook(app, caller):
    """A webhook on a loopback receiver, registered while allowed; then the
    configuration refuses private targets again."""
    receiver = Receiver()
    app.config.update(WEBHOOKS_ALLOW_PRIVATE_TARGETS=True, WEBHOOKS_ALLOWED_PORTS=[])
    hook = register(caller, receiver.url)
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = False
    yield hook, receiver
    receiver.close()


def test_an_attempt_refused_at_send_time_names_the_setting(caller, loopback_hook):
    hook, receiver = loopback_hook
    raise_event(caller.workspace_id, now=at(0))
    delivery.deliver_due(now=at(0))
    [attempt] = DeliveryAttempt.select()
    assert attempt.error == (
        f"URL refused: 127.0.0.1 is a loopback address; to allow it, set {PRIVATE}"
    )
    listed = caller.get(f"/v1/webhooks/{hook['id']}/deliveries").get_json()["data"]
    assert listed[0]["attempts"][0]["error"] == attempt.error
    assert receiver.requests == []


def test_the_test_endpoint_names_the_setting(app, caller, loopback_hook):
    hook, receiver = loopback_hook
    result = caller.post(f"/v1/webhooks/{hook['id']}/test").get_json()["data"]
    assert result["success"] is False
    assert result["error"] == (
        f"URL refused: 127.0.0.1 is a loopback address; to allow it, set {PRIVATE}"
    )
    assert receiver.requests == []
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = True
    assert caller.post(f"/v1/webhooks/{hook['id']}/test").get_json()["data"]["success"]
    assert len(receiver.requests) == 1


# --- URL trainings ----------------------------------------------------------------


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://127.0.0.1/faq", "127.0.0.1 is a loopback address"),
        ("http://10.0.0.5/faq", "10.0.0.5 is a private address"),
        ("https://93.184.216.34:5000/faq", f"port 5000 is not allowed (allowed: {DEFAULT_PORTS})"),
    ],
)
def test_a_url_training_names_the_setting_that_allows_it(caller, url, reason):
    agent = make_agent(caller)
    response = caller.post(f"/v1/agents/{agent}/trainings", json={"type": "url", "url": url})
    assert refusal(response) == f"url: refused: {reason}; to allow it, set {TRAININGS}"
    assert Training.select().count() == 0


def test_the_trainings_setting_lets_a_loopback_page_in(app, caller):
    agent = make_agent(caller)
    with serving(Ok) as url:
        body = {"type": "url", "url": url + "/faq"}
        refusal(caller.post(f"/v1/agents/{agent}/trainings", json=body))
        app.config["TRAININGS_ALLOW_PRIVATE_URLS"] = True
        response = caller.post(f"/v1/agents/{agent}/trainings", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.get_json()["data"]["status"] == "ready"


# --- intentions ---------------------------------------------------------------------


def intention_body(url):
    return {"name": "Hours", "examples": ["opening hours"], "action": "webhook", "url": url}


def test_an_intention_url_names_the_webhooks_settings(app, caller):
    agent = make_agent(caller)
    path = f"/v1/agents/{agent}/intentions"
    message = refusal(caller.post(path, json=intention_body("http://127.0.0.1/hook")))
    assert message == f"url: refused: 127.0.0.1 is a loopback address; to allow it, set {PRIVATE}"
    app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = True
    message = refusal(caller.post(path, json=intention_body("http://127.0.0.1:5000/hook")))
    assert message.endswith(f"to allow it, set {PORTS}")
    app.config["WEBHOOKS_ALLOWED_PORTS"] = [5000]
    assert caller.post(path, json=intention_body("http://127.0.0.1:5000/hook")).status_code == 201


def test_an_intention_url_refused_when_called_names_the_setting(app, caller, fake):  # noqa: F811
    agent = make_agent(caller)
    add_qa(caller, agent, "What are your opening hours?", "Nine to five.")
    channel = agent_channel(caller, agent)
    received = []

    class Hook(Ok):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.reply(200, "application/json", b"{}")

    with serving(Hook) as url:
        app.config.update(WEBHOOKS_ALLOW_PRIVATE_TARGETS=True, WEBHOOKS_ALLOWED_PORTS=[])
        body = intention_body(url + "/hook")
        assert caller.post(f"/v1/agents/{agent}/intentions", json=body).status_code == 201
        app.config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = False
        message = customer_says(channel["id"], "what are your opening hours?", at(0))
        run_replies(at(2))
    note = Message.get_by_id(message.id).metadata["intention"]["webhook"]
    assert note["ok"] is False
    assert note["error"] == (
        f"URL refused: 127.0.0.1 is a loopback address; to allow it, set {PRIVATE}"
    )
    assert received == []
