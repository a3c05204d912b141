"""Names equal whatever their case ("Straße" is "STRASSE"), in each
engine's form. SQLite's collation UNICODE_NOCASE (db.py) folds both sides
fully. PostgreSQL's (ICU's root locale at secondary strength, see its
migration 0001) ignores case but not the one full folding it keeps at that
strength: ß (and ẞ) against ss, so both sides spell it out first."""

from peewee import fn

from .dialect import engine

_SHARP_S = ("ß", "ẞ")


def same_name(column, name):
    """`column` holds `name`, but for case."""
    if not engine.postgresql:
        return column.collate("UNICODE_NOCASE") == name
    for sharp in _SHARP_S:
        column, name = fn.replace(column, sharp, "ss"), name.replace(sharp, "ss")
    return column.collate("UNICODE_NOCASE") == name
