from datetime import datetime

import pytest

from agent_platform.errors import NotFound, ValidationError
from agent_platform.models import Conversation, Event
from agent_platform.services import credits
from conftest import assert_error


@pytest.fixture
def agent(caller):
    return caller.post("/v1/agents", json={"name": "Ana"}).get_json()["data"]["id"]


def at(text):
    return datetime.fromisoformat(text)


def record(caller, agent, amount, when, conversation=None):
    return credits.record_usage(
        caller.workspace_id, agent, amount, conversation_id=conversation, now=at(when)
    )


def test_report_is_per_day_with_distinct_conversations(caller, agent):
    one = Conversation.create(workspace=caller.workspace_id).id
    two = Conversation.create(workspace=caller.workspace_id).id
    record(caller, agent, 1.5, "2026-03-02T08:00:00", one)
    record(caller, agent, 2, "2026-03-02T23:59:59", one)
    record(caller, agent, 1, "2026-03-02T12:00:00", two)
    record(caller, agent, 4, "2026-03-05T00:00:00", two)
    record(caller, agent, 10, "2026-04-01T00:00:00", two)  # next month
    report = caller.get(f"/v1/agents/{agent}/credits?from=2026-03-01&to=2026-03-31")
    assert report.status_code == 200
    assert report.get_json()["data"] == {
        "total_credits": 8.5,
        "period_start": "2026-03-01T00:00:00.000000Z",
        "period_end": "2026-03-31T23:59:59.999999Z",
        "breakdown": [
            {"date": "2026-03-02", "credits": 4.5, "conversations": 2},
            {"date": "2026-03-05", "credits": 4.0, "conversations": 1},
        ],
    }


def test_default_period_is_the_current_month(caller, agent):
    report = credits.usage_report(caller.workspace_id, agent, now=at("2024-02-10T10:00:00"))
    assert report["period_start"] == at("2024-02-01T00:00:00")
    assert report["period_end"] == at("2024-02-29T23:59:59.999999")
    body = caller.get(f"/v1/agents/{agent}/credits").get_json()["data"]
    assert body["period_start"].endswith("-01T00:00:00.000000Z")
    assert body["total_credits"] == 0 and body["breakdown"] == []


def test_one_bound_takes_the_month_of_the_other(caller, agent):
    body = caller.get(f"/v1/agents/{agent}/credits?from=2026-02-10").get_json()["data"]
    assert (body["period_start"][:10], body["period_end"][:10]) == ("2026-02-10", "2026-02-28")
    body = caller.get(f"/v1/agents/{agent}/credits?to=2026-06-15").get_json()["data"]
    assert (body["period_start"][:10], body["period_end"][:10]) == ("2026-06-01", "2026-06-15")


def test_a_whole_year_is_allowed(caller, agent):
    path = f"/v1/agents/{agent}/credits?from=2024-01-01&to=2024-12-31"  # 366 days
    response = caller.get(path)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()["data"]
    assert body["period_start"] == "2024-01-01T00:00:00.000000Z"
    assert body["period_end"] == "2024-12-31T23:59:59.999999Z"
    assert (body["total_credits"], body["breakdown"]) == (0, [])


@pytest.mark.parametrize(
    "query, field",
    [
        ("from=2026-03-10&to=2026-03-01", "from"),
        ("from=2024-01-01&to=2025-01-01", "to"),
        ("from=yesterday", "from"),
        ("to=2026-02-30", "to"),
        ("since=2026-01-01", "since"),
    ],
)
def test_invalid_ranges_are_400(caller, agent, query, field):
    assert_error(caller.get(f"/v1/agents/{agent}/credits?{query}"), 400, "VALIDATION_ERROR", field)


def test_isolation_and_scope(caller, other, agent, make_caller):
    record(caller, agent, 3, "2026-03-02T08:00:00")
    assert_error(other.get(f"/v1/agents/{agent}/credits"), 404, "AGENT_NOT_FOUND")
    with pytest.raises(NotFound):
        credits.record_usage(other.workspace_id, agent, 1)
    theirs = Conversation.create(workspace=other.workspace_id).id
    with pytest.raises(NotFound):
        credits.record_usage(caller.workspace_id, agent, 1, conversation_id=theirs)
    writer = make_caller(scopes=["agents:write"], workspace_id=caller.workspace_id)
    assert_error(
        writer.get(f"/v1/agents/{agent}/credits"), 403, "INSUFFICIENT_SCOPE", "agents:read"
    )


def test_credits_must_be_positive(caller, agent):
    for amount in (0, -1):
        with pytest.raises(ValidationError):
            credits.record_usage(caller.workspace_id, agent, amount)


def test_no_events_without_a_plan(caller, agent):
    record(caller, agent, 1_000_000, "2026-03-02T08:00:00")
    assert credits.balance(caller.workspace_id) is None
    assert Event.select().where(Event.name.startswith("credit.")).count() == 0


class TestPlanCredits:
    @pytest.fixture
    def settings(self, tmp_path):
        return {"DATABASE_PATH": str(tmp_path / "test.db"), "PLAN_CREDITS": 100}

    def events(self, workspace_id):
        # Insertion order (two events of one entry share their created_at).
        query = Event.select().where(Event.workspace == workspace_id).order_by(Event.id)
        return [(event.name, event.data) for event in query]

    def test_low_then_depleted_each_once_per_month(self, caller, agent):
        record(caller, agent, 85, "2026-03-02T08:00:00")
        assert self.events(caller.workspace_id) == []
        record(caller, agent, 5, "2026-03-03T08:00:00")  # 10 left: crosses 10%
        record(caller, agent, 5, "2026-03-04T08:00:00")  # still low: nothing new
        record(caller, agent, 7, "2026-03-05T08:00:00")  # -2 left: depleted
        record(caller, agent, 1, "2026-03-06T08:00:00")  # still depleted: nothing new
        names = [name for name, _ in self.events(caller.workspace_id)]
        assert names == ["credit.low", "credit.depleted"]
        low, depleted = (data for _, data in self.events(caller.workspace_id))
        assert low["remaining_credits"] == 10 and low["plan_credits"] == 100
        assert low["agent_id"] == agent and low["period_start"] == "2026-03-01T00:00:00Z"
        assert depleted["remaining_credits"] == -2 and depleted["used_credits"] == 102
        balance = credits.balance(caller.workspace_id, now=at("2026-03-20T00:00:00"))
        assert balance["remaining_credits"] == -3
        # A new month starts with the whole allowance again.
        record(caller, agent, 95, "2026-04-01T00:00:00")
        assert [name for name, _ in self.events(caller.workspace_id)][2:] == ["credit.low"]

    def test_one_entry_can_cross_both_lines(self, caller, agent, other):
        record(caller, agent, 100, "2026-03-02T08:00:00")
        assert [name for name, _ in self.events(caller.workspace_id)] == [
            "credit.low",
            "credit.depleted",
        ]
        # Balances are per workspace.
        assert self.events(other.workspace_id) == []
        assert credits.balance(other.workspace_id)["remaining_credits"] == 100

    def test_a_failed_entry_raises_nothing(self, caller, agent):
        with pytest.raises(ValidationError):
            record(caller, agent, -5, "2026-03-02T08:00:00")
        with pytest.raises(NotFound):
            record(caller, agent, 99, "2026-03-02T08:00:00", conversation="nope")
        assert self.events(caller.workspace_id) == []
