"""The sales pipeline through HTTP: columns (order, kinds, refusing to drop
held deals), opportunities with exact ISO 4217 values, moves with history,
won and lost, the summary, a lead's conversion, isolation."""

import pytest

from agent_platform.db import database
from agent_platform.money import from_minor, to_minor, weighted
from conftest import assert_error
from conversations_helpers import data, event_names, events, make_contact


def column(caller, name, probability, kind="open"):
    body = {"name": name, "probability": probability, "kind": kind}
    return data(caller.post("/v1/pipeline/columns", json=body), 201)


def pipeline(caller):
    """New (10%), Proposal (60%), Won (100%), Lost (0%)."""
    return {
        "new": column(caller, "New", 10),
        "proposal": column(caller, "Proposal", 60),
        "won": column(caller, "Won", 100, "won"),
        "lost": column(caller, "Lost", 0, "lost"),
    }


def deal(caller, value="1000.00", currency="EUR", **values):
    body = {"title": "Deal", "value": value, "currency": currency, **values}
    return data(caller.post("/v1/opportunities", json=body), 201)


def move(caller, opportunity_id, column_id, **values):
    body = {"column_id": column_id, **values}
    return caller.post(f"/v1/opportunities/{opportunity_id}/move", json=body)


BOARD = "/v1/pipeline/columns?sort=position&order=asc"


def test_columns_are_ordered_and_reordered_in_one_call(caller):
    columns = pipeline(caller)
    listed = caller.get(BOARD).get_json()["data"]
    assert [c["name"] for c in listed] == ["New", "Proposal", "Won", "Lost"]
    assert [c["position"] for c in listed] == [0, 1, 2, 3]
    newest_first = caller.get("/v1/pipeline/columns").get_json()["data"]
    assert [c["name"] for c in newest_first] == ["Lost", "Won", "Proposal", "New"]
    order = [columns[name]["id"] for name in ("proposal", "new", "lost", "won")]
    reordered = data(caller.put("/v1/pipeline/columns/order", json={"column_ids": order}))
    assert [c["id"] for c in reordered] == order
    listed = caller.get(BOARD).get_json()["data"]
    assert [c["name"] for c in listed] == ["Proposal", "New", "Lost", "Won"]
    assert "pipeline.reordered" in event_names(caller.workspace_id)


def test_a_reorder_must_name_every_column_once(caller):
    columns = pipeline(caller)
    ids = [c["id"] for c in columns.values()]
    for wrong in (ids[:3], [*ids, ids[0]], [*ids[:3], "0190b0a0-0000-7000-8000-000000000000"]):
        response = caller.put("/v1/pipeline/columns/order", json={"column_ids": wrong})
        assert_error(response, 400, "VALIDATION_ERROR", "column_ids")
    listed = caller.get(BOARD).get_json()["data"]
    assert [c["name"] for c in listed] == ["New", "Proposal", "Won", "Lost"]


def test_values_are_exact_decimals_in_minor_units(caller):
    pipeline(caller)
    euro = deal(caller, "1234.50", "EUR")
    assert (euro["value"], euro["value_minor"], euro["currency"]) == ("1234.50", 123450, "EUR")
    yen = deal(caller, "1500", "JPY")
    assert (yen["value"], yen["value_minor"]) == ("1500", 1500)
    dinar = deal(caller, "0.125", "KWD")
    assert (dinar["value"], dinar["value_minor"]) == ("0.125", 125)
    tiny = deal(caller, "0.10", "USD")
    assert tiny["value"] == "0.10"  # 0.1 + 0.2 stays exact: no float in between


@pytest.mark.parametrize(
    ("value", "currency", "field"),
    [
        ("12.345", "EUR", "value"),  # more places than the euro has
        ("1.5", "JPY", "value"),  # the yen has none
        (12.5, "EUR", "value"),  # a JSON number could be a float already
        ("1e3", "EUR", "value"),
        ("-5.00", "EUR", "value"),
        ("9999999999999999", "EUR", "value"),
        ("10.00", "EURO", "currency"),
        ("10.00", "XAU", "currency"),  # no minor unit: not money a deal is valued in
        ("10.00", "eur", "currency"),
    ],
)
def test_bad_values_and_currencies_are_refused(caller, value, currency, field):
    pipeline(caller)
    body = {"title": "Deal", "value": value, "currency": currency}
    assert_error(caller.post("/v1/opportunities", json=body), 400, "VALIDATION_ERROR", field)
    assert caller.get("/v1/opportunities").get_json()["pagination"]["total"] == 0


def test_money_helpers_round_trip_and_weight_exactly():
    assert to_minor("999999999999.999", "KWD") == 999999999999999
    assert from_minor(999999999999999, "KWD") == "999999999999.999"
    assert from_minor(5, "EUR") == "0.05"
    assert weighted(333, 50) == 166  # 166.5 rounds half to even
    assert weighted(335, 50) == 168  # 167.5 rounds half to even


def test_an_opportunity_without_columns_is_refused_with_the_way_out(caller):
    body = {"title": "Deal", "value": "10.00", "currency": "EUR"}
    assert_error(caller.post("/v1/opportunities", json=body), 409, "PIPELINE_EMPTY", "column")


def test_moves_keep_a_history_and_won_or_lost_follow_the_column(caller):
    columns = pipeline(caller)
    opportunity = deal(caller)
    assert opportunity["column_id"] == columns["new"]["id"] and opportunity["status"] == "open"
    data(move(caller, opportunity["id"], columns["proposal"]["id"]))
    won = data(move(caller, opportunity["id"], columns["won"]["id"]))
    assert won["status"] == "won" and won["closed_at"]
    path = f"/v1/opportunities/{opportunity['id']}/history"
    history = caller.get(f"{path}?order=asc").get_json()["data"]
    assert [(h["from_column_id"], h["to_column_name"]) for h in history] == [
        (None, "New"),
        (columns["new"]["id"], "Proposal"),
        (columns["proposal"]["id"], "Won"),
    ]
    assert caller.get(path).get_json()["data"] == history[::-1]  # the latest move first
    assert all(h["moved_at"].endswith("Z") and h["actor"] for h in history)
    lost = data(move(caller, opportunity["id"], columns["lost"]["id"], lost_reason="budget"))
    assert (lost["status"], lost["lost_reason"]) == ("lost", "budget")
    reopened = data(move(caller, opportunity["id"], columns["new"]["id"]))
    assert reopened["status"] == "open" and reopened["closed_at"] is None
    names = [n for n in event_names(caller.workspace_id) if n.startswith("opportunity.")]
    assert names == [
        "opportunity.created",
        "opportunity.moved",
        "opportunity.moved",
        "opportunity.won",
        "opportunity.moved",
        "opportunity.lost",
        "opportunity.moved",
    ]
    again = move(caller, opportunity["id"], columns["new"]["id"])
    assert_error(again, 409, "OPPORTUNITY_ALREADY_IN_COLUMN")


def test_a_column_holding_deals_is_deleted_only_with_a_target(caller):
    columns = pipeline(caller)
    opportunity = deal(caller)
    path = f"/v1/pipeline/columns/{columns['new']['id']}"
    assert_error(caller.delete(path), 409, "PIPELINE_COLUMN_NOT_EMPTY", "move_to")
    assert (
        data(caller.get(f"/v1/opportunities/{opportunity['id']}"))["column_id"]
        == columns["new"]["id"]
    )
    assert_error(caller.delete(f"{path}?move_to={columns['new']['id']}"), 400, "VALIDATION_ERROR")
    assert caller.delete(f"{path}?move_to={columns['won']['id']}").status_code == 204
    moved = data(caller.get(f"/v1/opportunities/{opportunity['id']}"))
    assert (moved["column_id"], moved["status"]) == (columns["won"]["id"], "won")
    assert_error(caller.get(path), 404, "PIPELINE_COLUMN_NOT_FOUND")
    empty = f"/v1/pipeline/columns/{columns['proposal']['id']}"
    assert caller.delete(empty).status_code == 204


def test_the_kind_of_a_column_holding_deals_does_not_change(caller):
    columns = pipeline(caller)
    deal(caller)
    path = f"/v1/pipeline/columns/{columns['new']['id']}"
    assert_error(caller.patch(path, json={"kind": "won"}), 409, "PIPELINE_COLUMN_NOT_EMPTY")
    renamed = data(caller.patch(path, json={"name": "Inbox", "probability": 5}))
    assert (renamed["name"], renamed["probability"], renamed["kind"]) == ("Inbox", 5, "open")


def test_the_summary_counts_values_and_forecasts_per_column_and_currency(caller):
    columns = pipeline(caller)
    deal(caller, "100.00", "EUR")
    deal(caller, "0.05", "EUR")
    deal(caller, "300", "JPY")
    proposal = deal(caller, "1000.00", "EUR", column_id=columns["proposal"]["id"])
    deal(caller, "50.00", "EUR", column_id=columns["won"]["id"])
    summary = data(caller.get("/v1/pipeline/summary"))
    by_name = {c["name"]: c for c in summary["columns"]}
    assert [c["name"] for c in summary["columns"]] == ["New", "Proposal", "Won", "Lost"]
    assert by_name["New"]["count"] == 3
    assert by_name["New"]["values"] == [
        {"currency": "EUR", "count": 2, "value": "100.05", "weighted": "10.00"},
        {"currency": "JPY", "count": 1, "value": "300", "weighted": "30"},
    ]
    assert by_name["Proposal"]["values"][0]["weighted"] == "600.00"
    assert by_name["Lost"] == {**by_name["Lost"], "count": 0, "values": []}
    assert summary["totals"] == [
        {"currency": "EUR", "count": 4, "value": "1150.05", "weighted": "660.00"},
        {"currency": "JPY", "count": 1, "value": "300", "weighted": "30"},
    ]
    caller.patch(f"/v1/opportunities/{proposal['id']}", json={"value": "2000.00"})
    summary = data(caller.get("/v1/pipeline/summary"))
    assert summary["totals"][0]["value"] == "2150.05"


def test_the_summary_sums_the_largest_values_without_overflow(caller):
    columns = pipeline(caller)
    for _ in range(12):
        deal(caller, "9999999999999.99", "EUR", column_id=columns["won"]["id"])
    totals = data(caller.get("/v1/pipeline/summary"))["totals"]
    assert totals[0]["value"] == "119999999999999.88"


def test_changing_the_currency_needs_the_value_in_it(caller):
    pipeline(caller)
    opportunity = deal(caller, "10.00", "EUR")
    path = f"/v1/opportunities/{opportunity['id']}"
    assert_error(caller.patch(path, json={"currency": "JPY"}), 400, "VALIDATION_ERROR", "value")
    changed = data(caller.patch(path, json={"currency": "JPY", "value": "1500"}))
    assert (changed["value"], changed["currency"]) == ("1500", "JPY")
    titled = data(
        caller.patch(path, json={"title": "Renewal", "expected_close_date": "2026-12-01"})
    )
    assert titled["expected_close_date"] == "2026-12-01" and titled["value"] == "1500"
    assert events(caller.workspace_id, "opportunity.updated")[-1][1]["title"] == "Renewal"


def test_converting_a_lead_creates_its_opportunity_once(caller):
    columns = pipeline(caller)
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = data(caller.post("/v1/leads", json={"contact_id": contact["id"]}), 201)
    path = f"/v1/leads/{lead['id']}/convert"
    converted = data(caller.post(path, json={"value": "4800.00", "currency": "BRL"}), 201)
    assert converted["lead"]["status"] == "converted"
    opportunity = converted["opportunity"]
    assert opportunity["title"] == "Deal with Rita"
    assert (opportunity["lead_id"], opportunity["contact_id"]) == (lead["id"], contact["id"])
    assert opportunity["column_id"] == columns["new"]["id"]
    assert converted["lead"]["opportunity_id"] == opportunity["id"]
    again = caller.post(path, json={"value": "1.00", "currency": "BRL"})
    assert_error(again, 409, "LEAD_CONVERTED")
    assert caller.get("/v1/opportunities").get_json()["pagination"]["total"] == 1
    relabel = caller.patch(f"/v1/leads/{lead['id']}", json={"status": "new"})
    assert_error(relabel, 409, "LEAD_CONVERTED")
    assert {"lead.converted", "opportunity.created"} <= set(event_names(caller.workspace_id))


def test_a_failed_conversion_changes_nothing(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = data(caller.post("/v1/leads", json={"contact_id": contact["id"]}), 201)
    path = f"/v1/leads/{lead['id']}/convert"
    response = caller.post(path, json={"value": "1.00", "currency": "EUR"})
    assert_error(response, 409, "PIPELINE_EMPTY")
    assert data(caller.get(f"/v1/leads/{lead['id']}"))["status"] == "new"
    assert "lead.converted" not in event_names(caller.workspace_id)


def test_listing_filters_and_deleting(caller):
    columns = pipeline(caller)
    first = deal(caller, owner="ana")
    deal(caller, column_id=columns["won"]["id"])
    page = caller.get("/v1/opportunities?status=won").get_json()
    assert page["pagination"]["total"] == 1 and page["data"][0]["status"] == "won"
    assert caller.get("/v1/opportunities?owner=ana").get_json()["data"][0]["id"] == first["id"]
    assert caller.delete(f"/v1/opportunities/{first['id']}").status_code == 204
    assert_error(caller.get(f"/v1/opportunities/{first['id']}"), 404, "OPPORTUNITY_NOT_FOUND")
    assert "opportunity.deleted" in event_names(caller.workspace_id)


def test_another_workspace_reaches_no_column_or_opportunity(caller, other):
    columns = pipeline(caller)
    opportunity = deal(caller)
    theirs = column(other, "Theirs", 50)
    for method, path in [
        ("GET", f"/v1/opportunities/{opportunity['id']}"),
        ("PATCH", f"/v1/opportunities/{opportunity['id']}"),
        ("DELETE", f"/v1/opportunities/{opportunity['id']}"),
        ("GET", f"/v1/opportunities/{opportunity['id']}/history"),
    ]:
        response = other.request(method, path, json={"title": "x"})
        assert_error(response, 404, "OPPORTUNITY_NOT_FOUND")
    moved = move(other, opportunity["id"], theirs["id"])
    assert_error(moved, 404, "OPPORTUNITY_NOT_FOUND")
    into_theirs = move(caller, opportunity["id"], theirs["id"])
    assert_error(into_theirs, 404, "PIPELINE_COLUMN_NOT_FOUND")
    for method in ("GET", "PATCH", "DELETE"):
        response = other.request(
            method, f"/v1/pipeline/columns/{columns['new']['id']}", json={"name": "x"}
        )
        assert_error(response, 404, "PIPELINE_COLUMN_NOT_FOUND")
    borrowed = {"title": "x", "value": "1.00", "currency": "EUR", "column_id": columns["new"]["id"]}
    assert_error(other.post("/v1/opportunities", json=borrowed), 404, "PIPELINE_COLUMN_NOT_FOUND")
    summary = data(other.get("/v1/pipeline/summary"))
    assert [c["name"] for c in summary["columns"]] == ["Theirs"] and summary["totals"] == []
    assert other.get("/v1/opportunities").get_json()["pagination"]["total"] == 0


def test_ids_of_another_workspace_in_a_body_or_query_are_404(caller, other):
    columns = pipeline(caller)
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = data(caller.post("/v1/leads", json={"contact_id": contact["id"]}), 201)
    theirs = column(other, "Theirs", 50)
    their_deal = deal(other)
    body = {"title": "x", "value": "1.00", "currency": "EUR"}
    for name, value, code in (
        ("contact_id", contact["id"], "CONTACT_NOT_FOUND"),
        ("lead_id", lead["id"], "LEAD_NOT_FOUND"),
    ):
        made = other.post("/v1/opportunities", json={**body, name: value})
        assert_error(made, 404, code)
        changed = other.patch(f"/v1/opportunities/{their_deal['id']}", json={name: value})
        assert_error(changed, 404, code)
    dropped = other.delete(f"/v1/pipeline/columns/{theirs['id']}?move_to={columns['new']['id']}")
    assert_error(dropped, 404, "PIPELINE_COLUMN_NOT_FOUND")
    order = [theirs["id"], columns["new"]["id"]]
    mixed = other.put("/v1/pipeline/columns/order", json={"column_ids": order})
    assert_error(mixed, 400, "VALIDATION_ERROR", "column_ids")
    converted = caller.post(f"/v1/leads/{lead['id']}/convert", json={
        "value": "1.00", "currency": "EUR", "column_id": theirs["id"]})  # fmt: skip
    assert_error(converted, 404, "PIPELINE_COLUMN_NOT_FOUND")
    listed = other.get(f"/v1/opportunities?contact_id={contact['id']}").get_json()
    assert listed["pagination"]["total"] == 0
    assert data(caller.get(f"/v1/leads/{lead['id']}"))["status"] == "new"
    kept = data(other.get(f"/v1/opportunities/{their_deal['id']}"))
    assert (kept["contact_id"], kept["lead_id"]) == (None, None)
    assert other.get("/v1/opportunities").get_json()["pagination"]["total"] == 1
    assert data(other.get(f"/v1/pipeline/columns/{theirs['id']}"))["name"] == "Theirs"


def test_pipeline_routes_need_their_scopes(make_caller):
    reader = make_caller(scopes=["pipeline:read"])
    body = {"name": "x", "probability": 5}
    response = reader.post("/v1/pipeline/columns", json=body)
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "pipeline:write")
    assert reader.get("/v1/pipeline/summary").status_code == 200


def kept_totals():
    rows = database.execute_sql(
        'SELECT "workspace_id", "column_id", "currency", "opportunities", '
        '("value_high" << 30) + "value_low" FROM "pipeline_total" WHERE "opportunities" != 0'
    )
    return {(w, c, cur): (n, v) for w, c, cur, n, v in rows}


def actual_totals():
    rows = database.execute_sql(
        'SELECT "workspace_id", "column_id", "currency", count(*), sum("value_minor") '
        'FROM "opportunity" GROUP BY 1, 2, 3'
    )
    return {(w, c, cur): (n, v) for w, c, cur, n, v in rows}


def test_the_kept_totals_follow_every_kind_of_change(caller, other):
    columns = pipeline(caller)
    column(other, "Theirs", 50)
    first = deal(caller, "999999999999.99", "EUR")
    second = deal(caller, "0.01", "EUR", column_id=columns["proposal"]["id"])
    deal(other, "5.00", "USD")
    assert kept_totals() == actual_totals()
    caller.patch(f"/v1/opportunities/{first['id']}", json={"value": "12.34"})
    caller.patch(f"/v1/opportunities/{second['id']}", json={"currency": "JPY", "value": "7"})
    move(caller, first["id"], columns["won"]["id"])
    assert kept_totals() == actual_totals()
    caller.delete(f"/v1/opportunities/{second['id']}")
    caller.delete(f"/v1/pipeline/columns/{columns['won']['id']}?move_to={columns['lost']['id']}")
    assert kept_totals() == actual_totals()
    assert len(actual_totals()) == 2  # one of each workspace left
