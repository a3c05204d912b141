"""One rule for the default order of every listing: newest first (the
spec's `order` default, desc), by creation time or, for conversations, by
latest activity; a listing with an order of its own lists in that order
(docs/api.md, *Listing*). The OpenAPI document states both defaults."""

from conversations_helpers import data

LATEST_ACTIVITY = ("/v1/conversations", "/v1/chats", "/v1/interactions")
# The listings whose rows have an order of their own: the board, the
# calendar, a deal's history read as it happened.
OWN_ORDER = {
    "/v1/pipeline/columns": "position",
    "/v1/appointments": "start_at",
    "/v1/opportunities/{opportunity_id}/history": "moved_at",
}


def listings(spec):
    for path, item in spec["paths"].items():
        operation = item.get("get")
        if operation and any(p["name"] == "order" for p in operation.get("parameters", [])):
            yield path, {p["name"]: p["schema"] for p in operation["parameters"]}


def test_every_listing_documents_newest_first_as_its_default(client):
    spec = client.get("/openapi.json").get_json()
    found = dict(listings(spec))
    assert len(found) > 15  # the walk found the listings at all
    assert set(OWN_ORDER) <= set(found)
    for path, parameters in found.items():
        own = OWN_ORDER.get(path)
        assert parameters["order"]["default"] == ("asc" if own else "desc"), path
        assert parameters["order"]["enum"] == ["asc", "desc"], path
        sort = parameters["sort"]
        assert sort["default"] == sort["enum"][0], path
        expected = "updated_at" if path in LATEST_ACTIVITY else "created_at"
        assert sort["default"] == (own or expected), path


def test_without_order_a_listing_is_newest_first(caller):
    made = [data(caller.post("/v1/contacts", json={"name": f"C{i}"}), 201)["id"] for i in range(3)]
    assert [c["id"] for c in data(caller.get("/v1/contacts"))] == made[::-1]
    assert [c["id"] for c in data(caller.get("/v1/contacts?order=asc"))] == made


def test_a_listing_with_an_order_of_its_own_lists_in_it(caller):
    names = ["New", "Won"]
    for name, kind in zip(names, ("open", "won"), strict=True):
        body = {"name": name, "kind": kind, "probability": 50}
        data(caller.post("/v1/pipeline/columns", json=body), 201)
    assert [c["name"] for c in data(caller.get("/v1/pipeline/columns"))] == names
    reverse = data(caller.get("/v1/pipeline/columns?order=desc"))
    assert [c["name"] for c in reverse] == names[::-1]


def test_scoring_rules_are_newest_first_as_any_listing(caller):
    made = [
        data(caller.post("/v1/leads/scoring-rules", json=rule), 201)["id"]
        for rule in (
            {"name": "Wrote", "kind": "messages_received", "points": 5, "params": {"at_least": 1}},
            {
                "name": "Wrote more",
                "kind": "messages_received",
                "points": 5,
                "params": {"at_least": 3},
            },
        )
    ]
    assert [r["id"] for r in data(caller.get("/v1/leads/scoring-rules"))] == made[::-1]
