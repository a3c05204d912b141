"""docs/sales.md's walkthrough, step by step through HTTP: a customer's first
message makes a lead, its score qualifies it, it converts, and the deal is won."""

from datetime import datetime, timedelta

from agent_platform.models.base import utcnow
from conversations_helpers import WA_SETTINGS, data, event_names, inbound, make_channel, send


def test_a_lead_becomes_a_won_deal(caller):
    columns = {}
    for body in (
        {"name": "New", "probability": 10},
        {"name": "Proposal", "probability": 60},
        {"name": "Won", "probability": 100, "kind": "won"},
        {"name": "Lost", "probability": 0, "kind": "lost"},
    ):
        columns[body["name"]] = data(caller.post("/v1/pipeline/columns", json=body), 201)["id"]
    for rule in (
        {"name": "Keeps writing", "kind": "messages_received", "points": 30,
         "params": {"at_least": 3}},
        {"name": "Answers fast", "kind": "replied_within", "points": 20,
         "params": {"seconds": 600}},
        {"name": "Booked a visit", "kind": "appointment_booked", "points": 20, "params": {}},
    ):  # fmt: skip
        data(caller.post("/v1/leads/scoring-rules", json=rule), 201)
    settings = {"qualify_threshold": 50, "auto_create_leads": True}
    assert data(caller.patch("/v1/leads/settings", json=settings)) == settings

    # 3. A customer writes in, we answer, they answer within ten minutes, and again.
    channel = make_channel(caller, settings=WA_SETTINGS)
    phone = {"sender_id": "5511955556666", "sender_phone": "+5511955556666", "sender_name": "Rita"}
    first = inbound(channel["id"], "wamid.1", text="Hi, prices?", **phone)
    conversation_id = first.message.conversation_id
    [lead] = caller.get("/v1/leads").get_json()["data"]
    assert (lead["status"], lead["source"], lead["score"]) == ("new", "whatsapp", 0)
    ours = data(send(caller, conversation_id, "Which plan interests you?"), 201)
    answered = datetime.fromisoformat(ours["created_at"][:-1]) + timedelta(minutes=4)
    inbound(channel["id"], "wamid.2", text="The pro one", now=answered, **phone)
    lead = data(caller.get(f"/v1/leads/{lead['id']}"))
    assert (lead["score"], lead["status"]) == (20, "new")
    inbound(channel["id"], "wamid.3", text="For 12 people", now=answered + timedelta(1), **phone)
    lead = data(caller.get(f"/v1/leads/{lead['id']}"))
    assert (lead["score"], lead["status"]) == (50, "qualified")
    assert [reason["name"] for reason in lead["score_reasons"]] == ["Keeps writing", "Answers fast"]

    # The customer books a visit.
    start = (utcnow() + timedelta(days=3)).replace(microsecond=0)
    visit = {"contact_id": lead["contact_id"], "start_at": start.isoformat() + "Z",
             "end_at": (start + timedelta(hours=1)).isoformat() + "Z"}  # fmt: skip
    data(caller.post("/v1/appointments", json=visit), 201)
    lead = data(caller.get(f"/v1/leads/{lead['id']}"))
    assert lead["score"] == 70 and lead["score_reasons"][-1]["kind"] == "appointment_booked"

    adjusted = caller.post(
        f"/v1/leads/{lead['id']}/adjustments",
        json={"points": 15, "reason": "asked for a quote by phone"},
    )
    assert data(adjusted, 201)["score"] == 85

    # 4. Convert.
    body = {"value": "4800.00", "currency": "BRL", "expected_close_date": "2026-04-30"}
    converted = data(caller.post(f"/v1/leads/{lead['id']}/convert", json=body), 201)
    opportunity = converted["opportunity"]
    assert converted["lead"]["status"] == "converted"
    assert (opportunity["title"], opportunity["value"], opportunity["value_minor"]) == (
        "Deal with Rita",
        "4800.00",
        480000,
    )
    assert opportunity["column_id"] == columns["New"]

    # 5. Move it along to Won.
    path = f"/v1/opportunities/{opportunity['id']}"
    data(caller.post(f"{path}/move", json={"column_id": columns["Proposal"]}))
    won = data(caller.post(f"{path}/move", json={"column_id": columns["Won"]}))
    assert won["status"] == "won"
    history = caller.get(f"{path}/history?order=asc").get_json()["data"]
    assert [move["to_column_name"] for move in history] == ["New", "Proposal", "Won"]

    # 6. The dashboard's figures.
    summary = data(caller.get("/v1/pipeline/summary"))
    assert summary["totals"] == [
        {"currency": "BRL", "count": 1, "value": "4800.00", "weighted": "4800.00"}
    ]
    names = event_names(caller.workspace_id)
    for name in ("lead.created", "lead.qualified", "lead.converted", "opportunity.won"):
        assert name in names
