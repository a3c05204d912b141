"""Row ids: time-ordered UUIDv7s in the usual 36-character form."""

import types
import uuid

from agent_platform.models import base
from agent_platform.models.base import canonical_uuid, new_id


def test_ids_are_rfc_9562_version_7_uuids_in_canonical_form():
    for value in (new_id() for _ in range(200)):
        parsed = uuid.UUID(value)
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
        assert len(value) == 36 and canonical_uuid(value) == value


def test_ids_carry_the_millisecond_and_increase(monkeypatch):
    clock = types.SimpleNamespace(time_ns=lambda: 1_767_323_045_123_456_789)
    monkeypatch.setattr(base, "time", clock)
    monkeypatch.setattr(base, "_id_clock", [0, 0])
    same_millisecond = [new_id() for _ in range(5000)]  # more than the 12-bit counter holds
    assert same_millisecond == sorted(same_millisecond)
    assert len(set(same_millisecond)) == len(same_millisecond)
    assert int(same_millisecond[0].replace("-", "")[:12], 16) == 1_767_323_045_123
    assert all(uuid.UUID(value).version == 7 for value in same_millisecond)
    # The clock stepping back never makes an id smaller than the last one.
    clock.time_ns = lambda: 1_767_323_000_000_000_000
    assert new_id() > same_millisecond[-1]


def test_canonical_uuid_still_takes_version_4_ids():
    old = str(uuid.uuid4())
    assert canonical_uuid(old) == old
    assert canonical_uuid(old.upper()) == old
    assert canonical_uuid("not-a-uuid") is None
