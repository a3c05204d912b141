"""models.sqljson: a row written as JSON by the database (SQLite's printf()
or PostgreSQL's format(), whichever engine the tests run on) reads as the
API's encoder writes the same values, for every kind of field, NULL or not."""

import json
from datetime import datetime

import pytest
from peewee import (
    BooleanField,
    CharField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
)

from agent_platform.db import database
from agent_platform.formats import utc_timestamp
from agent_platform.models.base import JSONField, UtcDateTimeField
from agent_platform.models.sqljson import JsonForm

KINDS = {
    "label": (CharField, 'Größe "7" \\ 😀\n'),
    "notes": (TextField, "line\tone"),
    "count": (IntegerField, -42),
    "flag": (BooleanField, True),
    "settings": (JSONField, {"a": [1, "ä", None], "b": {"c": 'd"e'}}),
    "seen_at": (UtcDateTimeField, datetime(2026, 1, 2, 3, 4, 5, 678901)),
    "whole_second_at": (UtcDateTimeField, datetime(2026, 1, 2, 3, 4, 5)),
}


@pytest.fixture
def models(app):
    """A table of every kind of field in the app's database, so JsonForm
    writes the SQL of the engine under test."""

    class Owner(Model):
        id = CharField(primary_key=True)

        class Meta:
            table_name = "owner"

    columns = {name: kind(null=False) for name, (kind, _) in KINDS.items()}
    columns |= {f"maybe_{name}": kind(null=True) for name, (kind, _) in KINDS.items()}
    columns["owner"] = ForeignKeyField(Owner, null=True)
    columns["Meta"] = type("Meta", (), {"table_name": "row"})
    Row = type("Row", (Model,), {"id": CharField(primary_key=True), **columns})
    database.bind([Owner, Row])
    database.create_tables([Owner, Row])
    Owner.create(id="o-1")
    return Row


def rendered(model, row_id, names, **constants):
    form = JsonForm(model, names, **constants)
    sql = f'SELECT {form.expression} FROM "row" WHERE "id" = ?'
    return json.loads(model._meta.database.execute_sql(sql, (*form.params, row_id)).fetchone()[0])


def api_form(value):
    return utc_timestamp(value) if isinstance(value, datetime) else value


def test_every_kind_reads_back_as_the_api_writes_it(models):
    values = {name: value for name, (_, value) in KINDS.items()}
    models.create(id="r-1", owner="o-1", **values, **{f"maybe_{n}": v for n, v in values.items()})
    names = ["id", "owner", *values, *(f"maybe_{name}" for name in values), "company"]

    row = rendered(models, "r-1", names, company='c-ü"1')

    assert list(row) == names
    for name, value in values.items():
        assert row[name] == api_form(value), name
        assert row[f"maybe_{name}"] == api_form(value), name
    assert (row["id"], row["owner"], row["company"]) == ("r-1", "o-1", 'c-ü"1')
    assert row["whole_second_at"] == "2026-01-02T03:04:05.000000Z"


def test_nulls_read_back_as_null(models):
    values = {name: value for name, (_, value) in KINDS.items()}
    models.create(id="r-2", **values)
    names = ["owner", *(f"maybe_{name}" for name in values), "company"]

    row = rendered(models, "r-2", names, company=None)

    assert row == dict.fromkeys(names)


def test_false_and_zero_are_not_null(models):
    values = {name: value for name, (_, value) in KINDS.items()} | {"flag": False, "count": 0}
    models.create(id="r-3", **values, maybe_flag=False, maybe_count=0)

    row = rendered(models, "r-3", ["flag", "count", "maybe_flag", "maybe_count"])

    assert row == {"flag": False, "count": 0, "maybe_flag": False, "maybe_count": 0}


def test_a_name_that_is_not_an_identifier_is_refused(models):
    with pytest.raises(ValueError, match="JSON key"):
        JsonForm(models, ["100%"])
