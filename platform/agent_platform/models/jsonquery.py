"""Conditions on the members of stored JSON objects (contacts' custom
fields, messages' metadata), in each engine's form: SQLite's JSON1 functions, PostgreSQL's
jsonb operators on the text column cast to jsonb."""

import json

from peewee import SQL, NodeList, fn

from ..db import database
from .dialect import engine


def member_equals(column, key, value):
    """The member `key` of the object in `column` is `value` (a string, a
    number, or true/false)."""
    if engine.postgresql:
        mark = database.param
        return _cast(column, f" -> {mark} = {mark}::jsonb", [key, json.dumps(value)])
    if isinstance(value, bool):  # json_extract reads true and false as 1 and 0
        value = int(value)
    return fn.json_extract(column, _path(key)) == value


def array_holds(column, key, value):
    """The member `key` of the object in `column` is an array holding `value`."""
    if engine.postgresql:
        mark = database.param
        return _cast(column, f" -> {mark} @> {mark}::jsonb", [key, json.dumps([value])])
    return NodeList(
        (
            SQL("EXISTS (SELECT 1 FROM json_each("),
            column,
            SQL(", ?) WHERE value = ?)", [_path(key), value]),
        ),
        glue="",
    )


def member_text_sql(column_sql, *keys):
    """SQL text reading the member at `keys` (nested) of the JSON object in
    the column `column_sql` (written as SQL), for statements written by hand."""
    if engine.postgresql:
        return f"({column_sql}::jsonb #>> '{{{','.join(keys)}}}')"
    return f"json_extract({column_sql}, '$.{'.'.join(keys)}')"


def _path(key):
    return f'$."{key}"'


def _cast(column, condition, params):
    return NodeList((SQL("("), column, SQL(f"::jsonb{condition})", params)), glue="")
