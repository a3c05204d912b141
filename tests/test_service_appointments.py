"""The reminder job runs by itself in the served process: `agent-platform
serve` (its scheduler) sends an appointment's due reminder through the
Graph API stand-in and delivers appointment.reminder_sent to a webhook; a
restart on the same database does not send it again."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta

import requests

from agent_platform.models.base import utcnow
from conversations_helpers import WA_SETTINGS
from test_appointments import NINE_TO_FIVE, iso
from test_cli import ROOT, free_port, serving
from test_service_jobs import Api, delivered, peers, texts_sent, wait_for  # noqa: F401


def settings(tmp_path, graph, receiver):
    values = {
        "DATABASE_PATH": str(tmp_path / "served.db"),
        "MEDIA_DIR": str(tmp_path / "media"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        "APPOINTMENTS_REMINDER_POLL_SECONDS": 0.5,
        "MESSAGES_SEND_POLL_SECONDS": 0.5,
    }
    environ = dict(os.environ)
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in values.items()})
    return environ


def booked_with_a_due_reminder(api, receiver):
    """A reminder 120 minutes ahead of an appointment 90 minutes away: due now."""
    api.call("POST", "/v1/webhooks", {"url": receiver.url, "events": ["appointments"]}, 201)
    channel = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
    channel_id = api.call("POST", "/v1/channels", channel, 201)["id"]
    contact = api.call("POST", "/v1/contacts", {"name": "Bia", "phone": "+15557014422"}, 201)
    chat = {"contact_id": contact["id"], "channel_id": channel_id}
    conversation = api.call("POST", "/v1/conversations", chat, 201)
    api.call("PUT", "/v1/appointments/settings", {"reminder_offsets_minutes": [120]})
    hours = {"weekly_hours": NINE_TO_FIVE, "slot_minutes": 30}
    api.call("PUT", "/v1/appointments/availability", hours)
    start = (utcnow() + timedelta(minutes=90)).replace(microsecond=0)
    body = {
        "contact_id": contact["id"],
        "conversation_id": conversation["id"],
        "start_at": iso(start),
        "title": "Dental check-up",
    }
    return api.call("POST", "/v1/appointments", body, 201)


def test_the_served_app_sends_a_due_reminder_once(tmp_path, peers):  # noqa: F811
    graph, receiver = peers
    environ = settings(tmp_path, graph, receiver)
    port = free_port()
    with serving(["--port", str(port)], environ, port) as (base, lines):
        api = Api(base, lines[1].strip())
        appointment = booked_with_a_due_reminder(api, receiver)
        wait_for(
            lambda: any("Dental check-up" in t for t in texts_sent(graph)), "sent the reminder"
        )
        [raised] = wait_for(
            lambda: delivered(receiver, "appointment.reminder_sent"), "delivered the event"
        )
        assert raised["id"] == appointment["id"]
        assert raised["reminder"]["offset_minutes"] == 120
    with restarted(port, environ) as base:
        api = Api(base, api.headers["x-api-key"])
        time.sleep(3)  # six runs of the reminder job
        [done] = api.call("GET", f"/v1/appointments/{appointment['id']}/reminders")
        assert done["outcome"] == "sent"
    assert sum("Dental check-up" in text for text in texts_sent(graph)) == 1


def test_the_served_app_lets_one_of_racing_bookings_win(tmp_path, peers):  # noqa: F811
    """Eight customers ask the served process (gunicorn's threads, one
    SQLite database) for the same slot at the same moment: one 201, seven
    409 SLOT_TAKEN, one appointment."""
    graph, receiver = peers
    environ = settings(tmp_path, graph, receiver)
    port = free_port()
    with serving(["--port", str(port)], environ, port) as (base, lines):
        api = Api(base, lines[1].strip())
        hours = {"weekly_hours": ALL_WEEK, "slot_minutes": 30}
        api.call("PUT", "/v1/appointments/availability", hours)
        people = [
            api.call("POST", "/v1/contacts", {"name": f"P{n}", "phone": f"+1555701440{n}"}, 201)
            for n in range(8)
        ]
        start = (utcnow() + timedelta(days=2)).replace(hour=11, minute=0, second=0, microsecond=0)
        answers = race(api, [{"contact_id": p["id"], "start_at": iso(start)} for p in people])
        booked = api.call("GET", "/v1/appointments")
    assert sorted(status for status, _ in answers) == [201] + [409] * 7
    assert {body["error"]["code"] for status, body in answers if status == 409} == {"SLOT_TAKEN"}
    assert len(booked) == 1


ALL_WEEK = {
    day: [{"start": "00:00", "end": "24:00"}]
    for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
}


def race(api, bodies):
    """POST each body from its own thread, all released at once."""
    barrier, answers = threading.Barrier(len(bodies)), []

    def book(body):
        barrier.wait()
        response = requests.post(
            api.base + "/v1/appointments", json=body, headers=api.headers, timeout=30
        )
        answers.append((response.status_code, response.json()))

    threads = [threading.Thread(target=book, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(40)
    return answers


@contextlib.contextmanager
def restarted(port, environ):
    """`app.py --port` again on the same database (it prints no key this time)."""
    command = [sys.executable, "app.py", "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, env=environ, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(base), "answered after the restart")
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def _answers(base):
    try:
        return requests.get(base + "/v1/health", timeout=1).status_code == 200
    except requests.RequestException:
        return False
