"""Which engine the models write SQL for: `engine.postgresql` follows the
configured database (db.init_database), read where a model writes SQL by
hand in each engine's form (fastsql.py, sqljson.py, jsonquery.py), so the
services never ask which engine runs. Statements that only differ by
spelling are translated from SQLite's form by db_postgresql.py instead."""

from ..db import database, sqlite_database


class engine:  # noqa: N801 (read as a namespace: engine.postgresql)
    postgresql = False


@database.attach_callback
def _engine_chosen(engine_database):
    engine.postgresql = engine_database is not None and engine_database is not sqlite_database
