"""Contacts: E.164 phones, unique phone and e-mail, custom field values,
identities, filters, deletion, events, isolation and scopes."""

import json

import pytest

from agent_platform.models import Conversation, Message
from conftest import assert_error
from conversations_helpers import (
    WA_SETTINGS,
    data,
    events,
    inbound,
    make_channel,
    make_contact,
    make_conversation,
    send,
)


def custom_field(caller, name, field_type="text", **values):
    body = {"name": name, "field_type": field_type, **values}
    return data(caller.post("/v1/custom-fields", json=body), 201)


def test_create_returns_the_contact(caller):
    contact = make_contact(
        caller, name="Ana Souza", phone="+5511987654321", email="Ana@Example.com"
    )
    assert set(contact) == {
        "id",
        "name",
        "phone",
        "email",
        "custom_fields",
        "identities",
        "created_at",
        "updated_at",
    }
    assert (contact["name"], contact["phone"], contact["email"]) == (
        "Ana Souza",
        "+5511987654321",
        "ana@example.com",
    )
    assert (contact["custom_fields"], contact["identities"]) == ({}, [])
    assert data(caller.get(f"/v1/contacts/{contact['id']}")) == contact


@pytest.mark.parametrize(
    "phone",
    [
        "(11) 98765-4321",  # no country code
        "+05511987654321",  # country code cannot start with 0
        "55 11 98765-4321",  # separators without the plus: a local number
        "+1234567890123456",  # 16 digits
        "+123456",  # too short
        "+55119876543a1",
        "",
    ],
)
def test_phone_must_be_e164(caller, phone):
    response = caller.post("/v1/contacts", json={"name": "X", "phone": phone})
    assert_error(response, 400, "INVALID_PHONE_FORMAT", "phone")
    assert data(caller.get("/v1/contacts")) == []


def test_shortest_and_longest_e164_are_accepted(caller):
    make_contact(caller, phone="+1234567")
    make_contact(caller, phone="+123456789012345")


def test_bad_email_is_refused(caller):
    assert_error(
        caller.post("/v1/contacts", json={"email": "ana@"}), 400, "VALIDATION_ERROR", "email"
    )


def test_phone_and_email_are_unique_per_workspace(caller, other):
    first = make_contact(caller, phone="+5511987654321", email="ana@example.com")
    assert_error(
        caller.post("/v1/contacts", json={"phone": "+5511987654321"}),
        409,
        "CONTACT_PHONE_EXISTS",
        first["id"],
    )
    assert_error(
        caller.post("/v1/contacts", json={"email": "ANA@example.com"}),
        409,
        "CONTACT_EMAIL_EXISTS",
    )
    second = make_contact(caller, phone="+5511900000000")
    assert_error(
        caller.patch(f"/v1/contacts/{second['id']}", json={"phone": "+5511987654321"}),
        409,
        "CONTACT_PHONE_EXISTS",
    )
    # Keeping one's own phone is not a conflict; another workspace may have it.
    assert (
        caller.patch(f"/v1/contacts/{first['id']}", json={"phone": "+5511987654321"}).status_code
        == 200
    )
    make_contact(other, phone="+5511987654321", email="ana@example.com")


def test_patch_changes_what_is_given_and_null_clears(caller):
    contact = make_contact(caller, name="Ana", phone="+5511987654321", email="a@example.com")
    changed = data(
        caller.patch(f"/v1/contacts/{contact['id']}", json={"name": "Ana S.", "phone": None})
    )
    assert (changed["name"], changed["phone"], changed["email"]) == (
        "Ana S.",
        None,
        "a@example.com",
    )
    assert_error(
        caller.patch(f"/v1/contacts/{contact['id']}", json={"phone": "123"}),
        400,
        "INVALID_PHONE_FORMAT",
    )
    assert_error(
        caller.patch(f"/v1/contacts/{contact['id']}", json={"nick": "x"}),
        400,
        "VALIDATION_ERROR",
        "nick",
    )


def test_custom_field_values_are_checked_and_shown_by_name(caller):
    custom_field(caller, "Plan", "select", options=["free", "pro"])
    custom_field(caller, "Seats", "number")
    custom_field(caller, "Tags", "multiselect", options=["vip", "b2b", "new"])
    custom_field(caller, "Active", "boolean")
    custom_field(caller, "Since", "date")
    custom_field(caller, "Site", "url")
    values = {
        "Plan": "pro",
        "Seats": 12,
        "Tags": ["vip", "b2b"],
        "Active": True,
        "Since": "2024-02-29",
        "Site": "https://shop.example.com",
    }
    contact = make_contact(caller, name="Ana", custom_fields=values)
    assert contact["custom_fields"] == values


@pytest.mark.parametrize(
    "name, value",
    [
        ("Plan", "gold"),
        ("Plan", 1),
        ("Seats", "twelve"),
        ("Seats", True),
        ("Tags", ["vip", "vip"]),
        ("Tags", ["other"]),
        ("Tags", "vip"),
        ("Active", "yes"),
        ("Since", "29/02/2024"),
        ("Mail", "not-an-email"),
        ("Phone", "12345"),
        ("Site", "ftp://x"),
        ("Nope", "x"),
    ],
)
def test_wrong_custom_field_values_are_refused_naming_the_field(caller, name, value):
    custom_field(caller, "Plan", "select", options=["free", "pro"])
    custom_field(caller, "Seats", "number")
    custom_field(caller, "Tags", "multiselect", options=["vip"])
    custom_field(caller, "Active", "boolean")
    custom_field(caller, "Since", "date")
    custom_field(caller, "Mail", "email")
    custom_field(caller, "Phone", "phone")
    custom_field(caller, "Site", "url")
    response = caller.post("/v1/contacts", json={"custom_fields": {name: value}})
    code = "INVALID_PHONE_FORMAT" if name == "Phone" else "VALIDATION_ERROR"
    assert_error(response, 400, code, f"custom_fields.{name}")


def test_an_archived_field_is_found_by_its_name_in_any_case_unicode_too(caller):
    # Names differing in non-ASCII case are one name, archived or not.
    field = custom_field(caller, "Ébène", "text")
    contact = make_contact(caller, custom_fields={"Ébène": "noir"})
    assert caller.put(f"/v1/custom-fields/{field['id']}/archive").status_code == 200
    listed = caller.get("/v1/contacts?custom_field[éBÈNE]=noir").get_json()["data"]
    assert [item["id"] for item in listed] == [contact["id"]]  # read: still there
    written = caller.post("/v1/contacts", json={"custom_fields": {"ÉBÈNE": "x"}})
    assert_error(written, 400, "VALIDATION_ERROR", "the custom field is archived")


def test_required_and_archived_fields(caller):
    custom_field(caller, "Plan", "text", is_required=True)
    old = custom_field(caller, "Legacy", "text")
    assert caller.put(f"/v1/custom-fields/{old['id']}/archive").status_code == 200
    assert_error(
        caller.post("/v1/contacts", json={"name": "A"}),
        400,
        "MISSING_REQUIRED_FIELD",
        "custom_fields.Plan",
    )
    assert_error(
        caller.post("/v1/contacts", json={"custom_fields": {"Plan": "x", "Legacy": "y"}}),
        400,
        "VALIDATION_ERROR",
        "archived",
    )
    contact = make_contact(caller, custom_fields={"Plan": "basic"})
    assert_error(
        caller.patch(f"/v1/contacts/{contact['id']}", json={"custom_fields": {"Plan": None}}),
        400,
        "MISSING_REQUIRED_FIELD",
        "custom_fields.Plan",
    )
    # A change that does not touch custom fields is fine.
    assert caller.patch(f"/v1/contacts/{contact['id']}", json={"name": "B"}).status_code == 200


def test_custom_fields_are_merged_and_follow_a_rename(caller):
    plan = custom_field(caller, "Plan", "text")
    custom_field(caller, "City", "text")
    contact = make_contact(caller, custom_fields={"Plan": "pro", "City": "Recife"})
    path = f"/v1/contacts/{contact['id']}"
    changed = data(caller.patch(path, json={"custom_fields": {"City": None, "plan": "max"}}))
    assert changed["custom_fields"] == {"Plan": "max"}
    assert caller.patch(f"/v1/custom-fields/{plan['id']}", json={"name": "Tier"}).status_code == 200
    assert data(caller.get(path))["custom_fields"] == {"Tier": "max"}


def test_a_contacts_custom_values_hold_100000_characters_in_all(caller):
    # Each value may hold 10,000 characters, and a workspace any number of
    # fields: a page of 100 contacts holding 5 MB each was half a gigabyte.
    for number in range(11):
        custom_field(caller, f"Note {number}", "text")
    nine = {f"Note {number}": "é" * 9_998 for number in range(10)}  # 10,000 as JSON each
    contact = make_contact(caller, custom_fields=nine)
    path = f"/v1/contacts/{contact['id']}"
    response = caller.patch(path, json={"custom_fields": {"Note 10": "x"}})
    assert_error(response, 400, "VALIDATION_ERROR", "custom_fields")
    assert (
        "the values hold 100,003 characters as JSON; at most 100,000"
        in (response.get_json()["error"]["message"])
    )
    assert data(caller.get(path))["custom_fields"] == nine  # nothing changed
    smaller = {"Note 0": "short", "Note 10": "x"}
    assert set(data(caller.patch(path, json={"custom_fields": smaller}))["custom_fields"]) == {
        *nine,
        "Note 10",
    }


def test_a_page_shows_each_contact_as_its_own_read_does(caller):
    # A page reads each contact's custom values as the answer reaches it
    # (Contact.with_custom_values): every contact comes out whole.
    custom_field(caller, "Plan", "select", options=["Gold", "Free"])
    custom_field(caller, "Note", "text")
    channel = make_channel(caller, settings=WA_SETTINGS)
    inbound(channel["id"], "wamid.contact", sender_id="5511922223333", text="Oi")
    make_contact(caller, name="Ana", custom_fields={"Plan": "Gold", "Note": "é" * 9_000})
    make_contact(caller, name="Bia", phone="+5511944445555", email="bia@example.com")
    listed = data(caller.get("/v1/contacts?limit=100"))
    assert len(listed) == 3 and {contact["name"] for contact in listed} >= {"Ana", "Bia"}
    for contact in listed:
        assert contact == data(caller.get(f"/v1/contacts/{contact['id']}"))


def test_a_contact_deleted_while_its_page_is_written_is_left_out(caller):
    custom_field(caller, "Note", "text")
    made = [
        make_contact(caller, name=f"C{n}", custom_fields={"Note": f"{n} " + "word " * 1_900})
        for n in range(30)
    ]
    answer = caller.get("/v1/contacts?limit=100&order=asc", buffered=False)
    parts = iter(answer.response)
    first = next(parts)
    assert caller.delete(f"/v1/contacts/{made[-1]['id']}").status_code == 204
    body = json.loads(b"".join([first, *parts]))
    assert [contact["id"] for contact in body["data"]] == [c["id"] for c in made[:-1]]
    assert body["data"][0]["custom_fields"]["Note"].startswith("0 word")
    assert body["pagination"]["total"] == 30  # as counted when the page began


def test_identities_are_unique_and_replaced_by_patch(caller):
    contact = make_contact(
        caller,
        name="Ana",
        identities=[
            {"type": "whatsapp", "external_id": "5511987654321"},
            {"type": "telegram", "external_id": "99887766"},
        ],
    )
    assert [(i["type"], i["external_id"], i["channel_id"]) for i in contact["identities"]] == [
        ("whatsapp", "5511987654321", None),
        ("telegram", "99887766", None),
    ]
    assert_error(
        caller.post(
            "/v1/contacts", json={"identities": [{"type": "telegram", "external_id": "99887766"}]}
        ),
        409,
        "CONTACT_IDENTITY_EXISTS",
        contact["id"],
    )
    assert_error(
        caller.post(
            "/v1/contacts", json={"identities": [{"type": "whatsapp", "external_id": "+55"}]}
        ),
        400,
        "VALIDATION_ERROR",
        "identities[0].external_id",
    )
    assert_error(
        caller.post("/v1/contacts", json={"identities": [{"type": "fax", "external_id": "1"}]}),
        400,
        "VALIDATION_ERROR",
        "type",
    )
    changed = data(
        caller.patch(
            f"/v1/contacts/{contact['id']}",
            json={
                "identities": [
                    {"type": "telegram", "external_id": "99887766"},
                    {"type": "email", "external_id": "A@x.io"},
                ]
            },
        )
    )
    assert [(i["type"], i["external_id"]) for i in changed["identities"]] == [
        ("telegram", "99887766"),
        ("email", "a@x.io"),
    ]
    # The freed WhatsApp identity can go to someone else now.
    make_contact(caller, identities=[{"type": "whatsapp", "external_id": "5511987654321"}])


def test_list_filters(caller):
    custom_field(caller, "Plan", "select", options=["free", "pro"])
    custom_field(caller, "Tags", "multiselect", options=["vip", "b2b"])
    custom_field(caller, "Seats", "number")
    custom_field(caller, "Active", "boolean")
    ana = make_contact(
        caller,
        name="Ana Souza",
        phone="+5511987654321",
        email="ana@example.com",
        custom_fields={"Plan": "pro", "Tags": ["vip", "b2b"], "Seats": 3, "Active": True},
    )
    bruno = make_contact(
        caller,
        name="Bruno 50%_off",
        phone="+5521988887777",
        custom_fields={"Plan": "free", "Tags": ["b2b"], "Seats": 10, "Active": False},
    )

    def ids(query):
        return [item["id"] for item in data(caller.get("/v1/contacts?" + query))]

    assert ids("q=souza") == [ana["id"]]
    assert ids("q=98888") == [bruno["id"]]
    assert ids("q=example.com") == [ana["id"]]
    assert ids("q=50%25_") == [bruno["id"]]  # LIKE wildcards are literal
    assert ids("q=%25") == [bruno["id"]]
    assert ids("phone=%2B5511987654321") == [ana["id"]]
    assert ids("phone=5511987654321") == [ana["id"]]  # '+' may be left out
    assert ids("phone=+5511987654321") == [ana["id"]]  # or arrive as a space
    assert ids("email=ANA@example.com") == [ana["id"]]
    assert ids("custom_field.Plan=pro") == [ana["id"]]
    assert ids("custom_field.plan=free") == [bruno["id"]]
    assert ids("custom_field.Tags=vip") == [ana["id"]]
    assert sorted(ids("custom_field.Tags=b2b")) == sorted([ana["id"], bruno["id"]])
    assert ids("custom_field.Seats=10") == [bruno["id"]]
    assert ids("custom_field.Active=true") == [ana["id"]]
    assert ids("custom_field.Active=false&custom_field.Plan=free") == [bruno["id"]]
    assert ids("custom_field.Plan=pro&q=bruno") == []
    # The form OpenAPI documents (deepObject), as generated clients send it.
    assert ids("custom_field%5BPlan%5D=pro&custom_field[Seats]=3") == [ana["id"]]
    assert ids("sort=name&order=asc") == [ana["id"], bruno["id"]]
    assert ids("sort=name&order=desc") == [bruno["id"], ana["id"]]
    assert_error(
        caller.get("/v1/contacts?custom_field.Nope=1"), 400, "VALIDATION_ERROR", "custom_field.Nope"
    )
    nope = caller.get("/v1/contacts?custom_field[Nope]=1")
    assert_error(nope, 400, "VALIDATION_ERROR", "custom_field.Nope")
    assert_error(
        caller.get("/v1/contacts?custom_field.Seats=many"),
        400,
        "VALIDATION_ERROR",
        "custom_field.Seats",
    )
    assert_error(caller.get("/v1/contacts?phone=12"), 400, "INVALID_PHONE_FORMAT", "phone")
    assert_error(caller.get("/v1/contacts?sort=phone"), 400, "VALIDATION_ERROR", "sort")
    assert_error(caller.get("/v1/contacts?bogus=1"), 400, "VALIDATION_ERROR", "bogus")


def test_filter_by_channel(caller):
    whatsapp = make_channel(caller)
    telegram = make_channel(caller, name="TG", type="telegram")
    wrote = inbound(whatsapp["id"], "wamid.1").message.contact_id
    started = make_contact(caller, name="Started")
    make_conversation(caller, started["id"], telegram["id"])
    make_contact(caller, name="Nobody")
    listed = [c["id"] for c in data(caller.get(f"/v1/contacts?channel_id={whatsapp['id']}"))]
    assert listed == [wrote]
    listed = [c["id"] for c in data(caller.get(f"/v1/contacts?channel_id={telegram['id']}"))]
    assert listed == [started["id"]]
    assert_error(caller.get("/v1/contacts?channel_id=x"), 400, "VALIDATION_ERROR", "channel_id")


def test_events_carry_the_contact_once_each(caller):
    contact = make_contact(caller, name="Ana")
    path = f"/v1/contacts/{contact['id']}"
    updated = data(caller.patch(path, json={"name": "Ana S."}))
    assert caller.delete(path).status_code == 204
    assert events(caller.workspace_id) == [
        ("contact.created", contact),
        ("contact.updated", updated),
        ("contact.deleted", updated),
    ]


def test_failed_writes_raise_no_event(caller):
    make_contact(caller, phone="+5511987654321")
    caller.post("/v1/contacts", json={"phone": "+5511987654321"})
    caller.post("/v1/contacts", json={"phone": "nope"})
    assert [name for name, _ in events(caller.workspace_id)] == ["contact.created"]


def test_delete_erases_the_contact_and_its_conversations(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    contact = make_contact(
        caller,
        phone="+5511987654321",
        identities=[{"type": "whatsapp", "external_id": "5511987654321"}],
    )
    conversation = make_conversation(caller, contact["id"], channel["id"])
    message = data(send(caller, conversation["id"]), 201)
    kept = make_contact(caller, name="Kept")
    kept_conversation = make_conversation(caller, kept["id"], channel["id"])
    assert caller.delete(f"/v1/contacts/{contact['id']}").status_code == 204
    assert_error(caller.get(f"/v1/contacts/{contact['id']}"), 404, "CONTACT_NOT_FOUND")
    assert_error(caller.delete(f"/v1/contacts/{contact['id']}"), 404, "CONTACT_NOT_FOUND")
    assert_error(
        caller.get(f"/v1/conversations/{conversation['id']}"), 404, "CONVERSATION_NOT_FOUND"
    )
    assert Message.get_or_none(Message.id == message["id"]) is None
    assert Conversation.get_or_none(Conversation.id == kept_conversation["id"]) is not None
    # The identity is free again: the same person writing in is a new contact.
    result = inbound(channel["id"], "wamid.new", sender_id="5511987654321")
    assert result.message.contact_id not in (contact["id"], kept["id"])


def test_unknown_and_malformed_ids_are_404(caller):
    for contact_id in ("6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88", "nope"):
        assert_error(caller.get(f"/v1/contacts/{contact_id}"), 404, "CONTACT_NOT_FOUND", contact_id)


def test_another_workspace_cannot_see_or_touch_a_contact(caller, other):
    contact = make_contact(caller, name="Ana")
    path = f"/v1/contacts/{contact['id']}"
    assert_error(other.get(path), 404, "CONTACT_NOT_FOUND")
    assert_error(other.patch(path, json={"name": "x"}), 404, "CONTACT_NOT_FOUND")
    assert_error(other.delete(path), 404, "CONTACT_NOT_FOUND")
    assert data(other.get("/v1/contacts")) == []
    assert data(caller.get(path))["name"] == "Ana"
    assert events(other.workspace_id) == []


def test_scopes(make_caller):
    reader = make_caller(scopes=["contacts:read"])
    writer = make_caller(scopes=["contacts:write"], workspace_id=reader.workspace_id)
    contact = data(writer.post("/v1/contacts", json={"name": "Ana"}), 201)
    assert data(reader.get(f"/v1/contacts/{contact['id']}"))["name"] == "Ana"
    assert_error(reader.post("/v1/contacts", json={}), 403, "INSUFFICIENT_SCOPE", "contacts:write")
    assert_error(reader.delete(f"/v1/contacts/{contact['id']}"), 403, "INSUFFICIENT_SCOPE")
    assert_error(writer.get("/v1/contacts"), 403, "INSUFFICIENT_SCOPE", "contacts:read")
