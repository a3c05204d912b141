"""One rule for the default order of every listing: newest first (the
spec's `order` default, desc), by creation time or, for conversations, by
latest activity. The OpenAPI document states both defaults."""

from conversations_helpers import data

# Conversations (and the interactions, which are conversations) follow the
# latest activity; an opportunity's moves are rows made at moved_at.
NOT_BY_CREATION = {
    "/v1/conversations": "updated_at",
    "/v1/chats": "updated_at",
    "/v1/interactions": "updated_at",
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
    for path, parameters in found.items():
        assert parameters["order"]["default"] == "desc", path
        assert parameters["order"]["enum"] == ["asc", "desc"], path
        sort = parameters["sort"]
        assert sort["default"] == sort["enum"][0], path
        assert sort["default"] == NOT_BY_CREATION.get(path, "created_at"), path


def test_without_order_a_listing_is_newest_first(caller):
    made = [data(caller.post("/v1/contacts", json={"name": f"C{i}"}), 201)["id"] for i in range(3)]
    assert [c["id"] for c in data(caller.get("/v1/contacts"))] == made[::-1]
    assert [c["id"] for c in data(caller.get("/v1/contacts?order=asc"))] == made
