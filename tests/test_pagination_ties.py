"""Pages over rows whose sort values tie: ties are ordered by id in the
requested direction, and walking every page shows each row exactly once."""

import pytest

from conversations_helpers import data

ROWS = 23
LIMIT = 5


def walk(caller, path, sort, order):
    """Every page of a listing, in order, as the list of ids it showed."""
    shown, page = [], 1
    while True:
        query = f"{path}?sort={sort}&order={order}&limit={LIMIT}&page={page}"
        items = data(caller.get(query))
        if not items:
            return shown
        shown += [item["id"] for item in items]
        page += 1


@pytest.fixture
def tied_fields(caller):
    """Custom fields that all share one display_order (a listing SQLite renders)."""
    body = {"field_type": "text", "display_order": 7}
    return [
        data(caller.post("/v1/custom-fields", json={"name": f"f{i}", **body}), 201)["id"]
        for i in range(ROWS)
    ]


@pytest.fixture
def tied_contacts(caller):
    """Contacts that all share one name (a listing read through peewee models)."""
    return [data(caller.post("/v1/contacts", json={"name": "Ana"}), 201)["id"] for _ in range(ROWS)]


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_tied_custom_fields_break_by_id_in_the_requested_direction(caller, tied_fields, order):
    shown = walk(caller, "/v1/custom-fields", "display_order", order)
    assert shown == sorted(tied_fields, reverse=order == "desc")


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_tied_contacts_break_by_id_in_the_requested_direction(caller, tied_contacts, order):
    shown = walk(caller, "/v1/contacts", "name", order)
    assert shown == sorted(tied_contacts, reverse=order == "desc")
