"""Plans and trials without a payment provider: the CLI sets them, plan.changed
is raised on a change, trial.expiring before the end and trial.expired at it,
each once per trial end (a second process, a second run, a restart: no repeat).
The events reach a webhook subscribed to the billing category over HTTP."""

import json
from datetime import datetime, timedelta

import pytest
from click.testing import CliRunner

from agent_platform.cli import main
from agent_platform.events import delivery
from agent_platform.services import billing
from conftest import database_environ
from conversations_helpers import events
from webhooks_helpers import Receiver, register

END = datetime(2027, 3, 10, 12, 0)


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        "PLAN_TRIAL_WARNING_DAYS": 3,
    }


@pytest.fixture
def cli(app):
    environ = {**database_environ(app), "AGENT_PLATFORM_PLAN_TRIAL_WARNING_DAYS": "3"}

    def run(*args, code=0):
        result = CliRunner().invoke(main, list(args), env=environ)
        assert result.exit_code == code, result.output
        return json.loads(result.stdout) if "--json" in args and not code else result.output

    return run


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def delivered(receiver, now=None):
    """(event, data) of every delivery the receiver got, in order."""
    delivery.deliver_due(now=now)
    bodies = [json.loads(received.body) for received in receiver.requests]
    return [(body["event"], body["data"]) for body in bodies]


def test_a_plan_change_raises_plan_changed_to_the_webhook(caller, cli, receiver):
    register(caller, receiver.url, ["billing"])
    shown = cli("workspaces", "plan", caller.workspace_id, "--json")
    assert shown == {"id": caller.workspace_id, "plan": "free", "trial_ends_at": None}
    changed = cli("workspaces", "plan", caller.workspace_id, "--plan", "pro", "--json")
    assert changed["plan"] == "pro"
    cli("workspaces", "plan", caller.workspace_id, "--plan", "pro")  # the same plan: no event
    assert delivered(receiver) == [
        (
            "plan.changed",
            {"workspace_id": caller.workspace_id, "previous_plan": "free", "plan": "pro"},
        )
    ]


@pytest.mark.parametrize(
    "args, mentions",
    [
        (["--plan", "Pro Plan"], "plan"),
        (["--plan", "x" * 51], "plan"),
        (["--trial-ends", "next tuesday"], "ISO 8601"),
        (["--trial-ends", "99999-01-01"], "ISO 8601"),
    ],
)
def test_bad_values_change_nothing(caller, cli, args, mentions):
    output = cli(
        "workspaces", "plan", caller.workspace_id, *args, code=2 if "--trial-ends" in args else 1
    )
    assert mentions in output
    assert cli("workspaces", "plan", caller.workspace_id, "--json")["plan"] == "free"
    assert events(caller.workspace_id) == []


def test_an_unknown_workspace_is_refused(cli):
    output = cli("workspaces", "plan", "no-such-workspace", "--plan", "pro", code=1)
    assert "does not exist" in output


def test_the_trial_raises_expiring_then_expired_once_each(caller, cli, receiver):
    register(caller, receiver.url, ["billing"])
    set_end = cli(
        "workspaces", "plan", caller.workspace_id, "--trial-ends", "2027-03-10T12:00:00Z", "--json"
    )
    assert set_end["trial_ends_at"] == "2027-03-10T12:00:00Z"
    assert billing.raise_trial_events(now=END - timedelta(days=3, seconds=1)) == 0
    assert billing.raise_trial_events(now=END - timedelta(days=2, hours=1)) == 1
    assert billing.raise_trial_events(now=END - timedelta(days=1)) == 0  # once
    assert billing.raise_trial_events(now=END) == 1
    assert billing.raise_trial_events(now=END + timedelta(days=30)) == 0  # once
    assert delivered(receiver, now=END + timedelta(days=30)) == [
        (
            "trial.expiring",
            {
                "workspace_id": caller.workspace_id,
                "plan": "free",
                "trial_ends_at": "2027-03-10T12:00:00Z",
                "days_left": 3,
            },
        ),
        (
            "trial.expired",
            {
                "workspace_id": caller.workspace_id,
                "plan": "free",
                "trial_ends_at": "2027-03-10T12:00:00Z",
                "days_left": 0,
            },
        ),
    ]


def test_a_missed_warning_is_not_raised_after_the_end(caller):
    billing.set_trial_end(caller.workspace_id, END)
    assert billing.raise_trial_events(now=END + timedelta(hours=1)) == 1
    assert billing.raise_trial_events(now=END + timedelta(hours=2)) == 0
    assert [name for name, _ in events(caller.workspace_id)] == ["trial.expired"]


def test_a_new_trial_end_gets_its_own_events(caller, cli):
    billing.set_trial_end(caller.workspace_id, END)
    assert billing.raise_trial_events(now=END) == 1
    cli("workspaces", "plan", caller.workspace_id, "--trial-ends", "2027-04-10")
    assert billing.raise_trial_events(now=datetime(2027, 4, 8)) == 1
    assert billing.raise_trial_events(now=datetime(2027, 4, 10)) == 1
    names = [name for name, _ in events(caller.workspace_id)]
    assert names == ["trial.expired", "trial.expiring", "trial.expired"]
    cli("workspaces", "plan", caller.workspace_id, "--trial-ends", "none")
    assert billing.raise_trial_events(now=datetime(2030, 1, 1)) == 0


def test_a_trial_changed_while_a_job_ran_raises_nothing_stale(caller):
    """The job read the workspace, then the trial end moved: the mark names
    the end it read, so it raises nothing for an end that no longer holds."""
    billing.set_trial_end(caller.workspace_id, END)
    (stale,) = billing.Workspace.trials_to_raise(END, timedelta(days=3))
    billing.set_trial_end(caller.workspace_id, END + timedelta(days=60))
    assert billing._raise_due(stale, END) == 0
    assert events(caller.workspace_id) == []


def test_new_workspaces_start_on_the_configured_plan_and_trial(tmp_path):
    environ = {
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "new.db"),
        "AGENT_PLATFORM_PLAN_DEFAULT": "starter",
        "AGENT_PLATFORM_PLAN_TRIAL_DAYS": "14",
    }
    runner = CliRunner()
    assert runner.invoke(main, ["migrate"], env=environ).exit_code == 0
    made = runner.invoke(main, ["workspaces", "create", "--name", "N", "--json"], env=environ)
    row = json.loads(made.stdout)
    assert row["plan"] == "starter"
    ends = datetime.fromisoformat(row["trial_ends_at"].removesuffix("Z"))
    created = datetime.fromisoformat(row["created_at"].removesuffix("Z"))
    assert timedelta(days=14) - timedelta(seconds=5) < ends - created <= timedelta(days=14)
    bad = runner.invoke(
        main, ["migrate"], env={**environ, "AGENT_PLATFORM_PLAN_TRIAL_DAYS": "100000"}
    )
    assert bad.exit_code == 2 and "plan.trial_days" in bad.output
