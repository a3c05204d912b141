"""models.counts: the row counts the triggers keep equal COUNT(*) after every
kind of change, and listings report them as their totals."""

from agent_platform.db import database, transaction
from agent_platform.models import ALL_MODELS, CustomField, Workspace
from agent_platform.services import keys
from conftest import ON_POSTGRESQL

COUNTED_MODELS = [model for model in ALL_MODELS if getattr(model, "COUNTED_BY", None)]


def kept_counts():
    rows = database.execute_sql(
        'SELECT "table_name", "workspace_id", "subset", "rows" FROM "row_count" WHERE "rows" != 0'
    )
    return {(table, workspace, subset): count for table, workspace, subset, count in rows}


def actual_counts():
    counts = {}
    for model in COUNTED_MODELS:
        table, column = model._meta.table_name, getattr(model, model.COUNTED_BY).column_name
        rows = database.execute_sql(
            f'SELECT "workspace_id", "{column}", count(*) FROM "{table}" GROUP BY 1, 2'
        )
        counts |= {(table, workspace, subset): count for workspace, subset, count in rows}
    return counts


def create(caller, name):
    return caller.post("/v1/custom-fields", json={"name": name, "field_type": "text"})


def total(caller, query=""):
    page = caller.get(f"/v1/custom-fields?limit=1{query}").get_json()
    assert page["pagination"]["total"] == page["meta"]["total"]
    return page["pagination"]["total"]


# The triggers in each engine's catalog.
TRIGGERS = {
    False: "SELECT name FROM sqlite_master WHERE type = 'trigger'",
    True: "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal",
}


def test_every_counted_model_has_its_triggers(app):
    triggers = {row[0] for row in database.execute_sql(TRIGGERS[ON_POSTGRESQL])}
    assert COUNTED_MODELS
    for model in COUNTED_MODELS:
        table = model._meta.table_name
        for change in ("insert", "update", "delete"):
            assert f"{table}_counted_{change}" in triggers


def test_counts_follow_creating_archiving_and_restoring(caller, other):
    ids = [create(caller, f"field {i}").get_json()["data"]["id"] for i in range(3)]
    create(other, "theirs")
    assert (total(caller), total(other)) == (3, 1)

    caller.put(f"/v1/custom-fields/{ids[0]}/archive")
    caller.put(f"/v1/custom-fields/{ids[0]}/archive")  # archiving again changes nothing
    assert total(caller) == 2
    assert total(caller, "&include_archived=true") == 3
    assert kept_counts() == actual_counts()

    caller.put(f"/v1/custom-fields/{ids[0]}/unarchive")
    assert total(caller) == 3
    assert kept_counts() == actual_counts()


def test_counts_follow_changes_made_outside_the_api(caller, other):
    ids = [create(caller, f"field {i}").get_json()["data"]["id"] for i in range(4)]
    with transaction():
        # Moved to another workspace and archived in one statement, then deleted.
        CustomField.update(workspace=other.workspace_id, is_archived=True).where(
            CustomField.id == ids[0]
        ).execute()
        CustomField.update(is_archived=True).where(CustomField.id.in_(ids[1:3])).execute()
        CustomField.delete().where(CustomField.id == ids[3]).execute()
    assert kept_counts() == actual_counts()
    assert (total(caller), total(caller, "&include_archived=true")) == (0, 2)
    assert total(other, "&include_archived=true") == 1


def test_a_rolled_back_change_leaves_the_counts(caller):
    create(caller, "kept")
    before = kept_counts()
    try:
        with transaction():
            CustomField.create(workspace=caller.workspace_id, name="gone", field_type="text")
            raise RuntimeError("abandon")
    except RuntimeError:
        pass
    assert kept_counts() == before == actual_counts()


def test_deleting_a_workspace_deletes_its_counts(app):
    workspace = keys.create_workspace("Short-lived")
    with transaction():
        CustomField.create(workspace=workspace.id, name="a", field_type="text")
        Workspace.delete().where(Workspace.id == workspace.id).execute()
    rows = database.execute_sql(
        'SELECT count(*) FROM "row_count" WHERE "workspace_id" = ?', (workspace.id,)
    )
    assert rows.fetchone()[0] == 0
