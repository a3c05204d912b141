"""Every write of the sales side raises its event, and webhooks subscribe to
them like to the rest: by name, or by the categories `leads` and `pipeline`."""

import pytest

from conversations_helpers import data, make_contact
from webhooks_helpers import Receiver, register


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


def queued(caller, hook):
    """The event names queued for the webhook, first to last."""
    path = f"/v1/webhooks/{hook['id']}/deliveries?order=asc&limit=100"
    return [delivery["event"] for delivery in caller.get(path).get_json()["data"]]


def every_sales_write(caller):
    data(caller.patch("/v1/leads/settings", json={"qualify_threshold": 90}))
    rule = {"name": "r", "kind": "messages_received", "points": 5, "params": {"at_least": 1}}
    rule_id = data(caller.post("/v1/leads/scoring-rules", json=rule), 201)["id"]
    data(caller.patch(f"/v1/leads/scoring-rules/{rule_id}", json={"points": 6}))
    assert caller.delete(f"/v1/leads/scoring-rules/{rule_id}").status_code == 204
    new = data(caller.post("/v1/pipeline/columns", json={"name": "New", "probability": 10}), 201)
    won_column = {"name": "Won", "probability": 100, "kind": "won"}
    won = data(caller.post("/v1/pipeline/columns", json=won_column), 201)
    lost_column = {"name": "Lost", "probability": 0, "kind": "lost"}
    lost = data(caller.post("/v1/pipeline/columns", json=lost_column), 201)
    data(caller.patch(f"/v1/pipeline/columns/{new['id']}", json={"probability": 20}))
    order = [won["id"], new["id"], lost["id"]]
    data(caller.put("/v1/pipeline/columns/order", json={"column_ids": order}))
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = data(caller.post("/v1/leads", json={"contact_id": contact["id"]}), 201)
    data(caller.patch(f"/v1/leads/{lead['id']}", json={"notes": "met at the fair"}))
    data(caller.post(f"/v1/leads/{lead['id']}/qualify"))
    body = {"value": "10.00", "currency": "EUR"}
    deal = data(caller.post(f"/v1/leads/{lead['id']}/convert", json=body), 201)["opportunity"]
    path = f"/v1/opportunities/{deal['id']}"
    data(caller.patch(path, json={"owner": "ana"}))
    data(caller.post(f"{path}/move", json={"column_id": won["id"]}))
    data(caller.post(f"{path}/move", json={"column_id": lost["id"], "lost_reason": "budget"}))
    assert caller.delete(path).status_code == 204
    assert caller.delete(f"/v1/pipeline/columns/{won['id']}").status_code == 204
    assert caller.delete(f"/v1/leads/{lead['id']}").status_code == 204


def test_every_write_raises_its_event_to_the_webhooks_subscribed(caller, receiver):
    by_category = register(caller, receiver.url, events=["leads", "pipeline"])
    by_name = register(caller, receiver.url + "/won", events=["opportunity.won"])
    every_sales_write(caller)
    assert queued(caller, by_category) == [
        "lead.settings_updated",
        "scoring_rule.created",
        "scoring_rule.updated",
        "scoring_rule.deleted",
        "pipeline_column.created",
        "pipeline_column.created",
        "pipeline_column.created",
        "pipeline_column.updated",
        "pipeline.reordered",
        "lead.created",
        "lead.updated",
        "lead.qualified",
        "opportunity.created",
        "lead.converted",
        "opportunity.updated",
        "opportunity.moved",
        "opportunity.won",
        "opportunity.moved",
        "opportunity.lost",
        "opportunity.deleted",
        "pipeline_column.deleted",
        "lead.deleted",
    ]
    assert queued(caller, by_name) == ["opportunity.won"]


def test_another_workspace_is_sent_none_of_them(caller, other, receiver):
    theirs = register(other, receiver.url, events=["*"])
    every_sales_write(caller)
    assert queued(other, theirs) == []
