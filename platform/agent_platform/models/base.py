"""Base model: UUID string ids, UTC timestamps, JSON columns, workspace scoping."""

import json
import os
import re
import threading
import time
import uuid
from datetime import UTC, datetime

from peewee import CharField, DateTimeField, DoesNotExist, Model, TextField

from ..db import database


def utcnow():
    """Naive UTC now: every stored time is UTC, rendered with a trailing Z."""
    return datetime.now(UTC).replace(tzinfo=None)


_id_lock = threading.Lock()
_id_clock = [0, 0]  # the last id's millisecond and counter


def new_id():
    """A new time-ordered id: a UUIDv7 (RFC 9562) in the usual 36-character form.

    48 bits of Unix time in milliseconds, the version nibble 7, a 12-bit
    counter (rand_a: random below 2048 in each new millisecond, then +1 for
    each further id in it, so the ids of this process always increase, even
    if the clock steps back), the variant, and 62 random bits. Rows made one
    after another thus go to the right edge of every index keyed by id
    instead of a random page each (as UUID4s did): fewer pages written per
    insert. Ids stay opaque: nothing may read the time out of them.
    """
    bits = int.from_bytes(os.urandom(10))  # 62 random bits, 11 for a new counter
    with _id_lock:
        millisecond, counter = _id_clock
        now = time.time_ns() // 1_000_000
        if now > millisecond:
            millisecond, counter = now, bits >> 69
        elif counter < 0xFFF:
            counter += 1
        else:  # 4096 ids in one millisecond: borrow the next one
            millisecond, counter = millisecond + 1, 0
        _id_clock[:] = millisecond, counter
    random = bits & 0x3FFF_FFFF_FFFF_FFFF
    value = millisecond << 80 | (0x7000 | counter) << 64 | 0b10 << 62 | random
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def canonical_uuid(value):
    """The canonical string form of a UUID, or None when `value` is not one.
    A string in that form already is returned as it is (parsing it costs
    more, on every network callback)."""
    if isinstance(value, str) and _CANONICAL_UUID.fullmatch(value):
        return value
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


# json.dumps(value, separators=(",", ":")) without what it redoes on every
# call: a JSONEncoder, then the C encoder that does the work. Built once here,
# without the circular-reference check (stored documents are plain data; a
# cycle fails as RecursionError instead of ValueError).
_compact = json.encoder.c_make_encoder(
    None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii,
    None, ":", ",", False, False, True,
)  # fmt: skip


def compact_json(value):
    """`value` as compact JSON text, as json.dumps(value, separators=(",", ":"))."""
    return "".join(_compact(value, 0))


class JSONField(TextField):
    """A JSON document stored as text."""

    # Most stored documents are empty (no options, no metadata): those skip
    # the decoder, a large part of the cost of reading a page of rows.
    _EMPTY = {"[]": list, "{}": dict}

    def db_value(self, value):
        return None if value is None else compact_json(value)

    def python_value(self, value):
        if value is None:
            return None
        empty = self._EMPTY.get(value)
        return empty() if empty else json.loads(value)


class UtcDateTimeField(DateTimeField):
    """A stored UTC time, read with datetime.fromisoformat: peewee's own parse
    tries strptime formats in turn, which is the biggest cost of a page."""

    def python_value(self, value):
        if isinstance(value, str):
            return datetime.fromisoformat(value)
        return super().python_value(value)


class BaseModel(Model):
    id = CharField(primary_key=True, max_length=36, default=new_id)

    class Meta:
        database = database
        legacy_table_names = False


class TimestampedModel(BaseModel):
    created_at = UtcDateTimeField(default=utcnow)
    updated_at = UtcDateTimeField(default=utcnow)

    def save(self, *args, **kwargs):
        # An update moves updated_at; an insert keeps the one set with created_at.
        keep = kwargs.pop("keep_updated_at", False)
        if self._pk is not None and not kwargs.get("force_insert") and not keep:
            self.updated_at = utcnow()
        return super().save(*args, **kwargs)


class WorkspaceScoped:
    """Queries for models that belong to a workspace.

    `in_workspace` is the only way the API layer reaches these tables, so a
    row of another workspace is simply not found (404), never forbidden.
    """

    @classmethod
    def in_workspace(cls, workspace_id):
        return cls.select().where(cls.workspace == workspace_id)

    @classmethod
    def get_in_workspace(cls, workspace_id, object_id, not_found):
        """The row with `object_id` in the workspace, else raise `not_found`."""
        object_id = canonical_uuid(object_id)
        if object_id is None:
            raise not_found
        try:
            return cls.in_workspace(workspace_id).where(cls.id == object_id).get()
        except DoesNotExist:
            raise not_found from None
