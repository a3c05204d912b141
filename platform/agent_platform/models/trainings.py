"""Trainings: an agent's knowledge (texts, Q&A pairs, web pages, documents).

Every row is mirrored in the FTS5 table `training_fts` by triggers (see
migrations/0003), so the index is exact whatever writes the table: insert,
update and delete change it in the same transaction. The FTS table is
contentless (it stores no second copy of the text) and keyed by
`search_rowid`, an integer of our own: the implicit rowid of a table with a
text primary key may be renumbered by VACUUM, this column never is.
"""

import re
from functools import cache

from peewee import CharField, ForeignKeyField, IntegerField, TextField, fn

from ..db import database
from ..long_statements import long_statements
from . import fastsql
from .agents import Agent
from .base import TimestampedModel, WorkspaceScoped
from .dialect import engine
from .streamed import with_the_rest
from .tenancy import Workspace

TYPES = ("text", "qa", "url", "document")
STATUSES = ("ready", "failed")
# A title's length in characters, typed or made from a file's or a page's.
MAX_TITLE = 500
# The fields each type shows in the API (the others of TYPE_FIELDS are null).
TYPE_FIELDS = ("title", "content", "question", "answer", "url", "filename")
SHOWN_FIELDS = {
    "text": ("title", "content"),
    "qa": ("question", "answer"),
    "url": ("url", "title", "content"),
    "document": ("filename", "title", "content"),
}
# The columns a search reads: what the API shows of a training (not
# workspace_id nor search_rowid), in this order, then the FTS5 rank.
SEARCH_COLUMNS = (
    "id",
    "agent_id",
    "type",
    "status",
    "failure_reason",
    "title",
    "content",
    "question",
    "answer",
    "url",
    "filename",
    "created_at",
    "updated_at",
)
# A row's columns in the order SQLite stores them, split at the content. A
# value longer than a page continues on a chain of overflow pages, and a
# column stored after it is reached only by reading every page of that chain:
# a page of forty 5 MB texts read 200 MB to show their urls. The leading
# columns are read without it; the trailing ones, one training at a time.
LEADING_COLUMNS = (
    "id",
    "created_at",
    "updated_at",
    "workspace_id",
    "agent_id",
    "type",
    "status",
    "failure_reason",
    "title",
)
TRAILING_COLUMNS = ("content", "question", "answer", "url", "filename")
# FTS5 finds and ranks the matches (bm25 with the weights of the table's rank
# setting, computed once per match, as the bare query does); the join keeps
# this agent's rows. Written once as SQL text: building it with peewee and
# loading rows through its raw-query machinery cost more than running it.
_SEARCH_SQL = (
    "SELECT {columns}, f.rank FROM training_fts AS f"
    " JOIN training AS t ON t.search_rowid = f.rowid"
    " WHERE training_fts MATCH ? AND t.agent_id = ?"
    " ORDER BY f.rank LIMIT ?"
)
# PostgreSQL's form: the GIN index finds the matches, ts_rank ranks them with
# the title (weight A) counting twice the body (B), as bm25(2.0, 1.0), its
# score divided by 1 + log(the document's length) as bm25 favours short
# documents; negated, so that lower is better there too. Ties go in the
# order trainings were added (FTS5's rowid order).
_PG_SEARCH_SQL = (
    "SELECT {columns}, -ts_rank('{{0.1, 0.2, 0.5, 1.0}}', f.document, q.query, 1) AS rank"
    " FROM to_tsquery('knowledge_words', ?) AS q (query)"
    " JOIN training_fts AS f ON f.document @@ q.query"
    " JOIN training AS t ON t.search_rowid = f.search_rowid"
    " WHERE t.agent_id = ?"
    " ORDER BY rank, t.search_rowid LIMIT ?"
)
# Letters and digits as the FTS5 unicode61 tokenizer sees them; everything
# else separates terms, so it can never reach FTS5 as query syntax.
_TERM = re.compile(r"[^\W_]+")


class Training(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="trainings", on_delete="CASCADE")
    # Indexed by (agent, created_at) below.
    agent = ForeignKeyField(Agent, backref="trainings", on_delete="CASCADE", index=False)
    type = CharField(max_length=20)
    status = CharField(max_length=20, default="ready")
    failure_reason = TextField(null=True)
    title = TextField(default="")
    content = TextField(default="")
    question = TextField(default="")
    answer = TextField(default="")
    url = TextField(null=True)
    filename = CharField(max_length=255, null=True)
    search_rowid = IntegerField(unique=True)

    class Meta:
        indexes = ((("agent", "created_at", "id"), False),)

    @classmethod
    def next_search_rowid(cls):
        """The next free FTS key; callers hold the write lock (BEGIN IMMEDIATE)."""
        return (cls.select(fn.COALESCE(fn.MAX(cls.search_rowid), 0)).scalar() or 0) + 1

    # Every write of a training runs in long_statements: its triggers index
    # (or take out of the index) a text of up to 5 MB within the statement.

    @classmethod
    def create(cls, **values):
        values.setdefault("search_rowid", cls.next_search_rowid())
        with long_statements():
            return super().create(**values)

    def save(self, *args, **kwargs):
        with long_statements():
            return super().save(*args, **kwargs)

    def delete_instance(self, *args, **kwargs):
        with long_statements():
            return super().delete_instance(*args, **kwargs)

    @classmethod
    def delete_of_agent(cls, agent_id):
        with long_statements():
            cls.delete().where(cls.agent == agent_id).execute()

    @classmethod
    def insert_rows(cls, rows, batch_size=500):
        """Bulk insert dicts of field values (FTS keys assigned here); the
        triggers index every row as it lands."""
        first = cls.next_search_rowid()
        for offset, row in enumerate(rows):
            row.setdefault("search_rowid", first + offset)
        with long_statements():
            for start in range(0, len(rows), batch_size):
                cls.insert_many(rows[start : start + batch_size]).execute()

    @classmethod
    def listed(cls, workspace_id, agent_id, type=None, status=None):
        query = cls.in_workspace(workspace_id).where(cls.agent == agent_id)
        if type:
            query = query.where(cls.type == type)
        if status:
            query = query.where(cls.status == status)
        return query

    @classmethod
    def previews(cls, workspace_id, agent_id, limit, content_chars):
        """The agent's newest trainings, at most `limit`, each with only the
        first `content_chars` characters of its content read: a list shows a
        few, and a content may be millions."""
        shown = [field for field in cls._meta.sorted_fields if field is not cls.content]
        cut = fn.SUBSTR(cls.content, 1, content_chars).alias("content")
        query = cls.select(*shown, cut).where(cls.workspace == workspace_id, cls.agent == agent_id)
        with long_statements():  # the url and file name are read past the whole content
            return list(query.order_by(cls.created_at.desc(), cls.id.desc()).limit(limit))

    @classmethod
    def leading_columns(cls):
        """The columns stored before the content (LEADING_COLUMNS), as fields."""
        return [cls._meta.columns[name] for name in LEADING_COLUMNS]

    @classmethod
    def with_the_rest(cls, trainings):
        """`trainings`, of which only the LEADING_COLUMNS were read, as a
        Streamed that reads the other columns of each when it is reached."""
        return with_the_rest(cls, trainings, TRAILING_COLUMNS)

    @classmethod
    def content_of(cls, training_id):
        """The whole content of a training (of any workspace: its caller found it)."""
        return cls.select(cls.content).where(cls.id == training_id).scalar()

    @classmethod
    def search_rows(cls, agent_id, text, limit, match_all=True, content_chars=None):
        """The agent's ready trainings best matching `text`, best first, as
        tuples of the SEARCH_COLUMNS as stored (the content's first
        `content_chars` only, if given; 0: the LEADING_COLUMNS only, the
        others null), then the rank (FTS5 bm25, or
        PostgreSQL's ts_rank negated: below 0, lower is better). Empty when
        `text` has no term. One statement."""
        expression = match_expression(text, match_all)
        if expression is None:
            return []
        sql = _search_sql(engine.postgresql, content_chars)
        with long_statements():  # a word found millions of times is ranked at each one
            return database.execute_sql(sql, (expression, str(agent_id), limit)).fetchall()

    @classmethod
    def search(cls, agent_id, text, limit, match_all=True, content_chars=None):
        """search_rows as Training instances, each with `.rank`."""
        rows = cls.search_rows(agent_id, text, limit, match_all, content_chars)
        hits = fastsql.from_rows(cls, SEARCH_COLUMNS, rows)
        for hit, row in zip(hits, rows, strict=True):
            hit.rank = row[-1]
        return hits

    def as_dict(self):
        """The API's form of a training: the fields its type has no use for are null."""
        shown = SHOWN_FIELDS.get(self.type, ())
        data = {
            "id": self.id,
            "agent_id": self.agent_id,
            "type": self.type,
            "status": self.status,
            "failure_reason": self.failure_reason,
        }
        for name in TYPE_FIELDS:
            data[name] = getattr(self, name) if name in shown else None
        data["created_at"] = self.created_at
        data["updated_at"] = self.updated_at
        return data


@cache
def _search_sql(postgresql, content_chars):
    columns = ", ".join(_search_column(name, content_chars) for name in SEARCH_COLUMNS)
    return (_PG_SEARCH_SQL if postgresql else _SEARCH_SQL).format(columns=columns)


def _search_column(name, content_chars):
    if content_chars == 0 and name in TRAILING_COLUMNS:
        return "NULL"
    if name == "content" and content_chars is not None:
        return f"SUBSTR(t.content, 1, {int(content_chars)})"
    return f"t.{name}"


def terms(text):
    return _TERM.findall(text or "")


def match_expression(text, match_all=True):
    """An FTS5 query for `text` (a tsquery on PostgreSQL), or None when it
    has no term.

    User input never reaches the index as syntax: it is cut into letter/digit
    terms, and each term is sent as a quoted string.
    """
    words = terms(text)
    if not words:
        return None
    unique = dict.fromkeys(word.lower() for word in words)
    if engine.postgresql:
        return (" & " if match_all else " | ").join(f"'{word}'" for word in unique)
    return (" AND " if match_all else " OR ").join(f'"{word}"' for word in unique)


def fts_row_count():
    """Rows in the search index (for checks that it matches the table)."""
    table = "training_fts" if engine.postgresql else "training_fts_docsize"
    return database.execute_sql(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
