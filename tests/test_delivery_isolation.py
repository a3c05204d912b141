"""One slow receiver does not hold up the others: while a receiver hangs
until the timeout on every request, the delivery job keeps claiming and
sending to healthy webhooks, and webhooks whose last attempt failed are sent
in a lane of their own. Real loopback receivers, the real job in a thread."""

import json
import threading
import time

import pytest

from agent_platform.events import claims, delivery
from agent_platform.models.base import utcnow
from agent_platform.models.webhooks import Webhook
from webhooks_helpers import Receiver, Reply, raise_event, register

TIMEOUT = 1  # WEBHOOKS_TIMEOUT_SECONDS: a hanging receiver costs this per attempt
POLL = 0.2


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        "WEBHOOKS_TIMEOUT_SECONDS": TIMEOUT,
        "WEBHOOKS_POLL_SECONDS": POLL,
        "WEBHOOKS_CONCURRENCY": 1,
    }


@pytest.fixture
def receivers():
    made = []

    def make(hangs=False):
        made.append(Receiver(default=Reply(delay=TIMEOUT + 2) if hangs else Reply()))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


@pytest.fixture
def run_job_in_background(app):
    """Start the delivery job in a thread, as the scheduler would; joined at the end."""
    threads = []

    def start():
        def run():
            with app.app_context():
                delivery.deliver_due()

        threads.append(threading.Thread(target=run, daemon=True))
        threads[-1].start()
        return threads[-1]

    yield start
    for thread in threads:
        thread.join(timeout=30)


def event_ids(receiver):
    return [json.loads(seen.body)["event_id"] for seen in list(receiver.requests)]


def received(receivers):
    return sum(len(receiver.requests) for receiver in receivers)


def wait_for(count, *receivers, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and received(receivers) < count:
        time.sleep(0.02)
    return received(receivers)


def test_a_hanging_receiver_does_not_hold_up_a_healthy_one(
    caller, receivers, run_job_in_background
):
    # One slot per lane: the hanging webhook, not yet known to fail, takes the
    # healthy lane's for one timeout, then moves to the failing lane.
    hanging, healthy = receivers(hangs=True), receivers()
    register(caller, hanging.url)
    register(caller, healthy.url)
    first = [raise_event(caller.workspace_id).id for _ in range(3)]
    job = run_job_in_background()
    assert wait_for(3, healthy, seconds=TIMEOUT + 1.0) == 3
    assert event_ids(healthy) == first
    # The hanging webhook's three attempts take three timeouts; meanwhile new
    # events reach the healthy receiver within a poll or two.
    later = [raise_event(caller.workspace_id).id for _ in range(3)]
    started = time.monotonic()
    assert wait_for(6, healthy, seconds=1.0) == 6
    assert time.monotonic() - started < 4 * POLL + 0.5
    assert event_ids(healthy) == first + later
    assert job.is_alive()  # still sending to the hanging receiver
    # The job goes on while deliveries are due (retries of the hanging one
    # come due too); deactivated, that webhook leaves it nothing to do.
    Webhook.update(is_active=False).where(Webhook.url == hanging.url).execute()
    job.join(timeout=3 * (TIMEOUT + 1))
    assert not job.is_alive()
    assert len(hanging.requests) >= 2  # one in the healthy lane, then the failing lane


def test_failing_webhooks_have_a_lane_of_their_own(caller, receivers, run_job_in_background):
    # One slot per lane (WEBHOOKS_CONCURRENCY 1): two hanging webhooks that
    # failed before share the failing lane; the healthy one has the other.
    hanging = [receivers(hangs=True) for _ in range(2)]
    for receiver in hanging:
        register(caller, receiver.url)
    Webhook.update(last_failure_at=utcnow()).execute()
    healthy = receivers()
    register(caller, healthy.url)
    ids = [raise_event(caller.workspace_id).id for _ in range(2)]
    job = run_job_in_background()
    assert wait_for(2, healthy, seconds=1.0) == 2
    assert event_ids(healthy) == ids
    # The failing lane's one slot: its request may arrive after the healthy
    # lane's two; a second comes only once the first has timed out.
    assert wait_for(1, *hanging, seconds=TIMEOUT / 2) == 1
    Webhook.update(is_active=False).where(Webhook.url != healthy.url).execute()
    job.join(timeout=3 * (TIMEOUT + 1))
    assert not job.is_alive()
    assert [len(receiver.requests) for receiver in hanging] in ([1, 0], [0, 1], [1, 1])


def test_without_lanes_the_claim_counts_every_webhook_alike(app, caller, receivers):
    for _ in range(3):
        register(caller, receivers().url)
    Webhook.update(last_failure_at=utcnow()).execute()
    raise_event(caller.workspace_id)
    claimed = claims.claim_due(max_webhooks=2)
    assert len({item.webhook_id for item in claimed}) == 2
    assert not any(item.failing for item in claimed)
