"""A commit that queued webhook deliveries wakes its process's delivery job:
the first attempt leaves at once, not at the job's next poll. Checked with
the poll set to 30 s, so only a wake-up can deliver within the tests' second:
through `serve` for real (gevent's worker), through `agent-platform worker`
beside it (a job's event), and through the plain threaded scheduler; and
the passes themselves (scheduler.Passes): never two at once, no wake-up lost."""

import json
import threading
import time
from contextlib import closing
from datetime import UTC, datetime

import pytest
import requests

from agent_platform.scheduler import Passes, build_scheduler
from conversations_helpers import WA_SETTINGS
from graph_stub import GraphStub
from test_service_jobs import wait_for
from test_serving import serve, working
from webhooks_helpers import Receiver, register

POLL = 30  # seconds: longer than any of these tests waits for a delivery


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def delay_of(received):
    """Seconds from the event (its envelope's timestamp) to its arrival."""
    stamp = json.loads(received.body)["timestamp"].removesuffix("Z")
    return received.at - datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()


def delivered(receiver, count):
    return lambda: len(receiver.requests) >= count


def contact(number):
    return {"name": f"C{number}", "phone": f"+55119111100{number}"}


def hook_settings(receiver, **more):
    return {
        "WEBHOOKS_POLL_SECONDS": POLL,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        **more,
    }


def test_an_event_raised_through_the_served_api_reaches_its_receiver_within_a_second(
    tmp_path, receiver
):
    with closing(serve(tmp_path, hook_settings(receiver))) as serving_:
        served = next(serving_)
        served.created("/v1/webhooks", {"url": receiver.url, "events": ["contact.created"]})
        for number in range(3):  # each commit wakes the job anew
            served.created("/v1/contacts", contact(number))
            wait_for(delivered(receiver, number + 1), "delivered the event", 1)
    assert [delay_of(received) < 1 for received in receiver.requests] == [True] * 3


def test_an_event_a_job_of_the_worker_raises_is_delivered_by_it_within_a_second(tmp_path, receiver):
    """serve with server.jobs off stores a message to send; the worker's send
    job sends it (message.sent), and its commit wakes the worker's delivery job."""
    graph = GraphStub(
        token=WA_SETTINGS["access_token"], phone_number_id=WA_SETTINGS["phone_number_id"]
    )
    settings = hook_settings(
        receiver,
        SERVER_JOBS=False,
        WHATSAPP_GRAPH_API_BASE=graph.base,
        WHATSAPP_CHECK_SERVICE_WINDOW=False,
        MESSAGES_SEND_POLL_SECONDS=0.2,
    )
    try:
        with closing(serve(tmp_path, settings)) as serving_:
            served = next(serving_)
            conversation = _conversation(served, receiver)
            with working(tmp_path, settings):
                _post(served, f"/v1/conversations/{conversation}/messages", {"text": "Hello"})
                # However long the worker takes to start: its delivery job polls first in 30 s.
                wait_for(lambda: receiver.requests, "delivered message.sent", 15)
        [received] = receiver.requests
        assert json.loads(received.body)["event"] == "message.sent"
        assert delay_of(received) < 1
    finally:
        graph.close()


def _conversation(served, receiver):
    """A webhook for sent messages, a WhatsApp channel, a contact, their conversation."""
    _post(served, "/v1/webhooks", {"url": receiver.url, "events": ["message.sent"]})
    channel = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
    channel_id = _post(served, "/v1/channels", channel)["id"]
    contact_id = _post(served, "/v1/contacts", {"name": "Bia", "phone": "+5511911112222"})["id"]
    body = {"contact_id": contact_id, "channel_id": channel_id}
    return _post(served, "/v1/conversations", body)["id"]


def _post(served, path, body):
    made = requests.post(
        served.base + path, json=body, headers={"X-API-Key": served.key}, timeout=5
    )
    assert made.status_code == 201, made.text
    return made.json()["data"]


@pytest.fixture
def settings(tmp_path, receiver):
    return {"DATABASE_PATH": str(tmp_path / "test.db"), **hook_settings(receiver)}


def test_the_threaded_schedulers_delivery_job_is_woken_by_a_request(app, make_caller, receiver):
    """The scheduler as `agent-platform worker` runs it: native threads."""
    caller = make_caller()
    register(caller, receiver.url, events=["contact.created"])
    scheduler = build_scheduler(app)
    scheduler.start()
    try:
        for number in range(3):
            made = caller.post("/v1/contacts", json=contact(number))
            assert made.status_code == 201
            wait_for(delivered(receiver, number + 1), "delivered the event", 1)
    finally:
        scheduler.shutdown()
    assert [delay_of(received) < 1 for received in receiver.requests] == [True] * 3


def test_without_a_scheduler_running_a_commit_wakes_nothing(make_caller, receiver):
    """serve with server.jobs off: the event waits for a worker's poll."""
    caller = make_caller()
    register(caller, receiver.url, events=["contact.created"])
    assert caller.post("/v1/contacts", json={"name": "Ana"}).status_code == 201
    time.sleep(0.5)
    assert receiver.requests == []


class Recorder:
    """A pass that notes how many run at once and what was committed when it began."""

    def __init__(self, hold=None):
        self.lock = threading.Lock()
        self.running = self.most = self.passes = 0
        self.committed = 0  # a counter standing for commits made
        self.seen = []  # `committed` as each pass began
        self.hold = hold

    def commit(self):
        with self.lock:
            self.committed += 1

    def __call__(self):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.passes += 1
            self.seen.append(self.committed)
        if self.hold is not None:
            self.hold.wait(5)
            self.hold = None
        time.sleep(0.001)
        with self.lock:
            self.running -= 1


def test_wake_ups_during_a_pass_make_one_more_pass_after_it():
    release = threading.Event()
    run = Recorder(hold=release)
    passes = Passes(run)
    passes.wake()
    for _ in range(5):
        passes.wake()
    passes.tick()  # the interval's run, while the woken pass runs: not a parallel one
    release.set()
    assert passes.wait_idle(5)
    assert (run.passes, run.most) == (2, 1)


def test_wake_ups_from_many_threads_run_one_pass_at_a_time_and_lose_none():
    run = Recorder()
    passes = Passes(run)

    def committer():
        for _ in range(200):
            run.commit()
            passes.wake()  # after each commit, as events.flush does

    threads = [threading.Thread(target=committer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert passes.wait_idle(5)
    assert run.most == 1
    assert run.seen[-1] == 8 * 200  # the last pass began after the last commit
    assert run.passes < 8 * 200  # wake-ups during a pass share the next one


def test_a_pass_that_raises_leaves_the_job_wakeable():
    calls = []

    def failing():
        calls.append(1)
        raise KeyboardInterrupt  # not caught by the job's wrapper, as a greenlet's kill

    passes = Passes(failing)
    with pytest.raises(KeyboardInterrupt):
        passes.tick()
    assert passes.wait_idle(1)
    with pytest.raises(KeyboardInterrupt):
        passes.tick()
    assert len(calls) == 2
