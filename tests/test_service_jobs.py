"""The service runs its own background work: `agent-platform serve` (gunicorn,
the scheduler started in its worker) answers a customer's signed WhatsApp
message from the agent's knowledge, sends the answer and a human's message
through the Graph API stand-in, and delivers the events to a webhook
receiver. No test code calls a job function: only the served app's scheduler
can make any of it happen."""

import json
import os
import time

import pytest
import requests

from agent_platform import create_app
from agent_platform.config import DEFAULTS
from agent_platform.scheduler import build_scheduler
from conversations_helpers import WA_SETTINGS
from graph_stub import GraphStub
from test_cli import free_port, serving
from webhooks_helpers import Receiver
from whatsapp_helpers import messages_payload, sign, text

QUESTION, ANSWER = "What time do you open?", "We open every day from 9 am to 6 pm."
CUSTOMER = "15557014422"


class Api:
    """requests against the served API with the first admin key."""

    def __init__(self, base, key):
        self.base, self.headers = base, {"x-api-key": key}

    def call(self, method, path, body=None, status=200):
        return self.answer(method, path, body, status)["data"]

    def answer(self, method, path, body=None, status=200):
        """The whole answer: its data and, for a list, its pagination."""
        response = requests.request(
            method, self.base + path, json=body, headers=self.headers, timeout=10
        )
        assert response.status_code == status, response.text
        return response.json()


def wait_for(found, what, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(0.1)
    pytest.fail(f"the served app never {what} within {seconds} s")


@pytest.fixture
def peers():
    graph = GraphStub(
        token=WA_SETTINGS["access_token"], phone_number_id=WA_SETTINGS["phone_number_id"]
    )
    receiver = Receiver()
    yield graph, receiver
    receiver.close()
    graph.close()


@pytest.fixture
def served(tmp_path, peers):
    graph, receiver = peers
    port = free_port()
    settings = {
        "DATABASE_PATH": str(tmp_path / "served.db"),
        "MEDIA_DIR": str(tmp_path / "media"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        "REPLIES_DEBOUNCE_SECONDS": 0,
    }
    environ = dict(os.environ)
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in settings.items()})
    with serving(["--port", str(port)], environ, port) as (base, lines):
        yield Api(base, lines[1].strip())


def shop(api, receiver):
    """A webhook for sent messages, an agent that knows one answer, its channel."""
    events = ["message.sent", "message.received"]
    api.call("POST", "/v1/webhooks", {"url": receiver.url, "events": events}, 201)
    agent = api.call("POST", "/v1/agents", {"name": "Ana"}, 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    api.call("POST", f"/v1/agents/{agent}/trainings", qa, 201)
    channel = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
    channel_id = api.call("POST", "/v1/channels", channel, 201)["id"]
    api.call("POST", f"/v1/channels/{channel_id}/connect", {"agent_id": agent})
    return channel_id


def customer_writes(api, channel_id, words):
    body = json.dumps(messages_payload(text(words, wamid="wamid.SERVED1", sender=CUSTOMER)))
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": sign(body.encode())}
    response = requests.post(
        f"{api.base}/inbound/whatsapp/{channel_id}", data=body, headers=headers, timeout=10
    )
    assert response.status_code == 200, response.text


def texts_sent(graph):
    return [body["text"]["body"] for body in graph.sent() if body.get("type") == "text"]


def delivered(receiver, name):
    bodies = [json.loads(seen.body) for seen in receiver.requests if seen.method == "POST"]
    return [body["data"] for body in bodies if body.get("type", body.get("event")) == name]


def test_the_served_app_answers_sends_and_delivers_by_itself(served, peers):
    graph, receiver = peers
    channel_id = shop(served, receiver)
    customer_writes(served, channel_id, QUESTION)
    # The reply job answered, the send job sent the answer to the Graph API.
    wait_for(lambda: ANSWER in texts_sent(graph), "sent the agent's answer")
    # A human's message, queued through the API, leaves through the send job too.
    [conversation] = served.call("GET", "/v1/conversations")
    human = {"text": "A human here, anything else?"}
    served.call("POST", f"/v1/conversations/{conversation['id']}/messages", human, 201)
    wait_for(lambda: human["text"] in texts_sent(graph), "sent the human's message")
    # The delivery job delivered the events to the webhook receiver.
    sent = wait_for(
        lambda: {m["text"] for m in delivered(receiver, "message.sent")} >= {ANSWER, human["text"]},
        "delivered both message.sent events",
    )
    assert sent
    [received] = delivered(receiver, "message.received")
    assert received["text"] == QUESTION


EXPECTED_JOBS = {
    "agent_platform.services.rate_limits.prune_windows_job": "RATE_LIMIT_WINDOW_SECONDS",
    "agent_platform.services.sending.send_queued_job": "MESSAGES_SEND_POLL_SECONDS",
    "agent_platform.services.messages.purge_idempotency_keys_job": (
        "MESSAGES_IDEMPOTENCY_PURGE_SECONDS"
    ),
    "agent_platform.services.replies.run_due_replies": "REPLIES_POLL_SECONDS",
    "agent_platform.services.replies.prune_reply_jobs": "REPLIES_IDLE_POLL_SECONDS",
    "agent_platform.services.idle_actions.run_idle_actions": "REPLIES_IDLE_POLL_SECONDS",
    "agent_platform.channels.whatsapp.tasks.run_tasks_job": "MEDIA_POLL_SECONDS",
    "agent_platform.channels.telegram.tasks.run_tasks": "MEDIA_POLL_SECONDS",
    "agent_platform.channels.telegram.polling.poll_updates": "TELEGRAM_POLL_SECONDS",
    "agent_platform.channels.email.polling.poll_mailboxes": "EMAIL_POLL_SECONDS",
    "agent_platform.events.delivery.deliver_due": "WEBHOOKS_POLL_SECONDS",
    "agent_platform.events.delivery.prune_deliveries": "WEBHOOKS_PRUNE_SECONDS",
    "agent_platform.services.appointment_reminders.send_reminders": (
        "APPOINTMENTS_REMINDER_POLL_SECONDS"
    ),
    "agent_platform.services.billing.raise_trial_events": "PLAN_TRIAL_CHECK_SECONDS",
}


def test_every_job_is_registered_with_its_own_interval(tmp_path):
    # Each interval setting gets a value of its own, so a job reading another's shows.
    keys = sorted(set(EXPECTED_JOBS.values()))
    intervals = {key: type(DEFAULTS[key])(11 + index) for index, key in enumerate(keys)}
    app = create_app({"DATABASE_PATH": str(tmp_path / "jobs.db"), **intervals})
    scheduler = build_scheduler(app)
    registered = {job.id: job.trigger.interval.total_seconds() for job in scheduler.get_jobs()}
    expected = {job: intervals[key] for job, key in EXPECTED_JOBS.items()}
    assert registered == expected


def test_jobs_run_one_at_a_time_in_utc_and_catch_up_once(tmp_path):
    app = create_app({"DATABASE_PATH": str(tmp_path / "jobs.db")})
    for job in build_scheduler(app).get_jobs():
        assert (job.max_instances, job.coalesce) == (1, True), job.id
        assert str(job.trigger.timezone) == "UTC"


def test_jobs_are_named_after_their_functions_without_the_package(tmp_path):
    # APScheduler's log lines name a job by its name: the function's, not the wrapper's.
    app = create_app({"DATABASE_PATH": str(tmp_path / "jobs.db")})
    names = {job.id: job.name for job in build_scheduler(app).get_jobs()}
    assert names == {job: job.removeprefix("agent_platform.") for job in EXPECTED_JOBS}


def test_a_job_runs_in_the_app_context_and_a_failure_is_logged(tmp_path, caplog, monkeypatch):
    from flask import current_app

    from agent_platform import scheduler
    from agent_platform.db import database

    app = create_app({"DATABASE_PATH": str(tmp_path / "jobs.db")})
    seen = []

    def probe(now=None):
        seen.append(current_app.config["DATABASE_PATH"])
        database.connect(reuse_if_open=True)
        raise RuntimeError("boom")

    monkeypatch.setattr(scheduler, "JOBS", [(probe, "WEBHOOKS_POLL_SECONDS")])
    [job] = build_scheduler(app).get_jobs()
    with caplog.at_level("ERROR", logger="agent_platform.scheduler"):
        job.func()  # as the scheduler calls it: no exception escapes
    assert seen == [str(tmp_path / "jobs.db")]
    [failure] = [record for record in caplog.records if record.name == "agent_platform.scheduler"]
    assert failure.getMessage() == "job probe failed"
    assert str(failure.exc_info[1]) == "boom"
    assert database.is_closed()  # its connection is not left open
    assert job.func.__name__ == "probe"


def test_the_busy_job_warning_is_silenced_and_nothing_else():
    import logging

    from agent_platform.scheduler import _StillRunning

    def record(message):
        return logging.LogRecord("apscheduler.scheduler", logging.WARNING, "", 0, message, (), None)

    busy = 'Execution of job "x" skipped: maximum number of running instances reached (1)'
    assert not _StillRunning().filter(record(busy))
    assert _StillRunning().filter(record("Run time of job x was missed by 0:00:05"))
