"""The trial job runs by itself in the served process: `agent-platform serve`
(its scheduler) raises trial.expiring and trial.expired for a trial end the
operator set with the CLI, and a webhook gets them over HTTP with the CLI's
plan.changed; a restart on the same database raises none of them again."""

import json
import os
import time
from datetime import timedelta

from click.testing import CliRunner

from agent_platform.cli import main
from agent_platform.models.base import utcnow
from test_cli import free_port, serving
from test_service_appointments import restarted
from test_service_jobs import Api, delivered, peers, wait_for  # noqa: F401

BILLING = ("plan.changed", "trial.expiring", "trial.expired")


def environment(tmp_path, receiver):
    values = {
        "DATABASE_PATH": str(tmp_path / "served.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        "PLAN_TRIAL_CHECK_SECONDS": 0.5,
        "WEBHOOKS_POLL_SECONDS": 0.5,
    }
    return {f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in values.items()}


def operator(environ, *args):
    """The CLI, as the operator runs it next to the served process."""
    result = CliRunner().invoke(main, ["workspaces", "plan", *args, "--json"], env=environ)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def raised(receiver):
    return {name: delivered(receiver, name) for name in BILLING}


def test_the_served_app_raises_each_billing_event_once_across_a_restart(tmp_path, peers):  # noqa: F811
    _, receiver = peers
    environ = environment(tmp_path, receiver)
    port = free_port()
    with serving(["--port", str(port)], {**os.environ, **environ}, port) as (base, lines):
        api = Api(base, lines[1].strip())
        workspace = api.call("GET", "/v1/me")["workspace_id"]
        api.call("POST", "/v1/webhooks", {"url": receiver.url, "events": ["billing"]}, 201)
        operator(environ, workspace, "--plan", "pro")
        ends = (utcnow() + timedelta(seconds=4)).replace(microsecond=0)
        shown = operator(environ, workspace, "--trial-ends", ends.isoformat() + "Z")
        assert shown == {"id": workspace, "plan": "pro", "trial_ends_at": ends.isoformat() + "Z"}
        wait_for(lambda: delivered(receiver, "trial.expiring"), "raised trial.expiring")
        assert delivered(receiver, "trial.expired") == []  # not before the end
        wait_for(lambda: delivered(receiver, "trial.expired"), "raised trial.expired")
    with restarted(port, {**os.environ, **environ}):
        time.sleep(3)  # six runs of the trial job, six of the delivery job
    seen = raised(receiver)
    assert seen["plan.changed"] == [
        {"workspace_id": workspace, "previous_plan": "free", "plan": "pro"}
    ]
    assert [event["days_left"] for event in seen["trial.expiring"]] == [1]
    assert [event["days_left"] for event in seen["trial.expired"]] == [0]
    assert {event["trial_ends_at"] for event in seen["trial.expired"]} == {ends.isoformat() + "Z"}
