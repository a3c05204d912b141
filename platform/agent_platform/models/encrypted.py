"""Columns that hold secrets, encrypted at rest (see secretbox).

Models read and write plain text; only the database holds `enc:v1:` tokens.
A JSON column may hold secrets under some keys only (a channel's settings):
those values are encrypted inside the document, the rest stays readable.
"""

import json

from peewee import CharField

from .. import secretbox
from ..db import database
from .base import JSONField, compact_json


class EncryptedCharField(CharField):
    """A secret string. The column keeps its declared VARCHAR type: SQLite
    does not enforce the length, and the token is longer than the secret."""

    def db_value(self, value):
        return None if value is None else secretbox.seal(value)

    def python_value(self, value):
        return None if value is None else secretbox.unseal(value)

    def stored_secrets(self, stored):
        return [stored]

    def rewrite(self, stored, change):
        return change(stored)


class SecretsJSONField(JSONField):
    """A JSON object whose string values under `secret_keys` (every key when
    None) are encrypted. A set given is read as it is then, not copied: its
    owner may add names later."""

    def __init__(self, secret_keys=None, **kwargs):
        self.secret_keys = secret_keys
        super().__init__(**kwargs)

    def _is_secret(self, key, value):
        return isinstance(value, str) and (self.secret_keys is None or key in self.secret_keys)

    def _mapped(self, document, change):
        if not isinstance(document, dict):
            return document
        return {
            key: change(value) if self._is_secret(key, value) else value
            for key, value in document.items()
        }

    def db_value(self, value):
        return super().db_value(self._mapped(value, secretbox.seal))

    def python_value(self, value):
        return self._mapped(super().python_value(value), secretbox.unseal)

    def stored_secrets(self, stored):
        document = json.loads(stored)
        if not isinstance(document, dict):
            return []
        return [value for key, value in document.items() if self._is_secret(key, value)]

    def rewrite(self, stored, change):
        return compact_json(self._mapped(json.loads(stored), change))


def secret_columns(models):
    """(model, field) of every column that holds secrets."""
    kinds = (EncryptedCharField, SecretsJSONField)
    return [
        (model, field)
        for model in models
        for field in model._meta.sorted_fields
        if isinstance(field, kinds)
    ]


def _rows(model, field):
    column, table = field.column_name, model._meta.table_name
    sql = f'SELECT "id", "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL'
    return database.execute_sql(sql).fetchall()


def stored_secrets(models):
    """Every secret value as stored (token or, from before, plain text)."""
    return [
        secret
        for model, field in secret_columns(models)
        for _, stored in _rows(model, field)
        for secret in field.stored_secrets(stored)
    ]


def rewrite_secrets(models, change):
    """Store `change(stored)` for every stored secret; the count of rows
    changed. Plain SQL: a row's updated_at and other columns stay as they are.
    The caller holds the transaction."""
    changed = 0
    for model, field in secret_columns(models):
        table, column, param = model._meta.table_name, field.column_name, database.param
        sql = f'UPDATE "{table}" SET "{column}" = {param} WHERE "id" = {param}'
        for row_id, stored in _rows(model, field):
            new = field.rewrite(stored, change)
            if new != stored:
                database.execute_sql(sql, (new, row_id))
                changed += 1
    return changed
