from datetime import datetime

from agent_platform.models import CustomField
from conftest import assert_error


def create(caller, **values):
    body = {"name": "Plan", "field_type": "text", **values}
    return caller.post("/v1/custom-fields", json=body)


def test_create_returns_the_spec_fields(caller):
    response = create(
        caller,
        name="Tier",
        field_type="select",
        options=["gold", "silver"],
        is_required=True,
    )
    assert response.status_code == 201
    field = response.get_json()["data"]
    assert set(field) == {
        "id",
        "company_id",
        "name",
        "field_type",
        "options",
        "is_required",
        "display_order",
        "is_archived",
        "created_at",
        "updated_at",
    }
    assert field["options"] == ["gold", "silver"]
    assert field["is_required"] is True
    assert field["is_archived"] is False
    assert field["display_order"] == 0
    assert field["created_at"].endswith("Z")
    me = caller.get("/v1/me").get_json()["data"]
    assert field["company_id"] == me["company_id"]


def test_get_and_update(caller):
    field_id = create(caller).get_json()["data"]["id"]
    response = caller.patch(
        f"/v1/custom-fields/{field_id}", json={"name": "Plan name", "display_order": 3}
    )
    assert response.status_code == 200
    updated = response.get_json()["data"]
    assert (updated["name"], updated["display_order"]) == ("Plan name", 3)
    assert updated["updated_at"] >= updated["created_at"]
    assert caller.get(f"/v1/custom-fields/{field_id}").get_json()["data"] == updated


def test_changing_type_to_text_drops_options(caller):
    field_id = create(caller, field_type="select", options=["a"]).get_json()["data"]["id"]
    response = caller.patch(f"/v1/custom-fields/{field_id}", json={"field_type": "number"})
    assert response.get_json()["data"]["options"] == []


def test_select_types_need_options(caller):
    for field_type in ("select", "multiselect"):
        assert_error(create(caller, field_type=field_type), 400, "VALIDATION_ERROR", "options")
        assert_error(
            create(caller, field_type=field_type, options=[]),
            400,
            "VALIDATION_ERROR",
            "options",
        )
    assert_error(
        create(caller, field_type="text", options=["x"]),
        400,
        "VALIDATION_ERROR",
        "options",
    )
    assert caller.get("/v1/custom-fields").get_json()["pagination"]["total"] == 0


def test_every_field_type_is_accepted_and_others_refused(caller):
    for index, field_type in enumerate(
        ("text", "number", "date", "boolean", "email", "phone", "url")
    ):
        assert create(caller, name=f"f{index}", field_type=field_type).status_code == 201
    assert_error(
        create(caller, name="x", field_type="colour"),
        400,
        "VALIDATION_ERROR",
        "field_type",
    )


def test_missing_and_unknown_fields_are_named(caller):
    assert_error(
        caller.post("/v1/custom-fields", json={"field_type": "text"}),
        400,
        "MISSING_REQUIRED_FIELD",
        "name",
    )
    assert_error(create(caller, colour="red"), 400, "VALIDATION_ERROR", "colour")
    assert_error(create(caller, name=""), 400, "VALIDATION_ERROR", "name")
    assert_error(create(caller, is_required="maybe"), 400, "VALIDATION_ERROR", "is_required")


def test_names_are_unique_among_active_fields(caller):
    create(caller, name="Plan")
    assert_error(create(caller, name="plan"), 409, "CUSTOM_FIELD_EXISTS", "plan")
    other_id = create(caller, name="Other").get_json()["data"]["id"]
    assert_error(
        caller.patch(f"/v1/custom-fields/{other_id}", json={"name": "PLAN"}),
        409,
        "CUSTOM_FIELD_EXISTS",
    )


def test_archive_is_idempotent_and_frees_the_name(caller):
    field = create(caller).get_json()["data"]
    first = caller.put(f"/v1/custom-fields/{field['id']}/archive")
    assert first.status_code == 200 and first.get_json()["data"]["is_archived"] is True
    second = caller.put(f"/v1/custom-fields/{field['id']}/archive")
    assert second.get_json()["data"] == first.get_json()["data"]
    assert create(caller, name="Plan").status_code == 201
    # Unarchiving would now clash with the new active field of the same name.
    assert_error(
        caller.put(f"/v1/custom-fields/{field['id']}/unarchive"),
        409,
        "CUSTOM_FIELD_EXISTS",
    )


def test_unarchive(caller):
    field_id = create(caller).get_json()["data"]["id"]
    caller.put(f"/v1/custom-fields/{field_id}/archive")
    response = caller.put(f"/v1/custom-fields/{field_id}/unarchive")
    assert response.status_code == 200
    assert response.get_json()["data"]["is_archived"] is False


def test_list_hides_archived_unless_asked(caller):
    create(caller, name="a")
    archived_id = create(caller, name="b").get_json()["data"]["id"]
    caller.put(f"/v1/custom-fields/{archived_id}/archive")
    names = [f["name"] for f in caller.get("/v1/custom-fields").get_json()["data"]]
    assert names == ["a"]
    listed = caller.get("/v1/custom-fields?include_archived=true").get_json()["data"]
    assert sorted(f["name"] for f in listed) == ["a", "b"]


def test_unknown_and_malformed_ids_are_not_found(caller):
    for field_id in ("6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88", "not-a-uuid"):
        assert_error(caller.get(f"/v1/custom-fields/{field_id}"), 404, "CUSTOM_FIELD_NOT_FOUND")
        assert_error(
            caller.put(f"/v1/custom-fields/{field_id}/archive"),
            404,
            "CUSTOM_FIELD_NOT_FOUND",
        )


def test_another_workspace_sees_nothing(caller, other):
    field_id = create(caller).get_json()["data"]["id"]
    assert_error(other.get(f"/v1/custom-fields/{field_id}"), 404, "CUSTOM_FIELD_NOT_FOUND")
    assert_error(
        other.patch(f"/v1/custom-fields/{field_id}", json={"name": "x"}),
        404,
        "CUSTOM_FIELD_NOT_FOUND",
    )
    assert_error(
        other.put(f"/v1/custom-fields/{field_id}/archive"),
        404,
        "CUSTOM_FIELD_NOT_FOUND",
    )
    assert other.get("/v1/custom-fields").get_json()["data"] == []
    # The same name is free in the other workspace.
    assert create(other).status_code == 201
    assert caller.get(f"/v1/custom-fields/{field_id}").get_json()["data"]["is_archived"] is False


def test_scopes(make_caller):
    reader = make_caller(scopes=["custom-fields:read"])
    assert_error(create(reader), 403, "INSUFFICIENT_SCOPE", "custom-fields:write")
    writer = make_caller(scopes=["custom-fields:write"], workspace_id=reader.workspace_id)
    field_id = create(writer).get_json()["data"]["id"]
    assert_error(writer.get("/v1/custom-fields"), 403, "INSUFFICIENT_SCOPE", "custom-fields:read")
    assert_error(writer.get(f"/v1/custom-fields/{field_id}"), 403, "INSUFFICIENT_SCOPE")
    assert reader.get(f"/v1/custom-fields/{field_id}").status_code == 200
    assert_error(reader.put(f"/v1/custom-fields/{field_id}/archive"), 403, "INSUFFICIENT_SCOPE")


def test_a_page_renders_every_field_as_getting_it_does(app, caller):
    """Pages are rendered by SQLite, single fields in Python: both must agree."""
    create(caller, name="Größe 😀", field_type="multiselect", options=["ä", 'b"c', "d\\e"])
    create(caller, name="Notes", is_required=True, display_order=7)
    archived = create(caller, name="Old").get_json()["data"]["id"]
    caller.put(f"/v1/custom-fields/{archived}/archive")
    whole_second = create(caller, name="Since").get_json()["data"]["id"]
    with app.app_context():
        # A time stored without a fraction (microsecond 0) renders .000000 both ways.
        stamp = datetime(2026, 1, 2, 3, 4, 5)
        CustomField.update(created_at=stamp).where(CustomField.id == whole_second).execute()

    page = caller.get("/v1/custom-fields?include_archived=true&limit=100").get_json()["data"]
    assert len(page) == 4
    for item in page:
        assert item == caller.get(f"/v1/custom-fields/{item['id']}").get_json()["data"]
    rendered = {item["name"]: item for item in page}
    assert rendered["Since"]["created_at"] == "2026-01-02T03:04:05.000000Z"
    assert rendered["Größe 😀"]["options"] == ["ä", 'b"c', "d\\e"]
    assert (rendered["Notes"]["is_required"], rendered["Notes"]["display_order"]) == (True, 7)
    assert (rendered["Old"]["is_archived"], rendered["Notes"]["is_archived"]) == (True, False)
