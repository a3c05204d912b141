"""PLAN_MAX_CHANNELS: active channels per workspace."""

import pytest

from conftest import assert_error
from conversations_helpers import make_channel


@pytest.fixture
def settings(tmp_path):
    return {"DATABASE_PATH": str(tmp_path / "test.db"), "PLAN_MAX_CHANNELS": 2}


def test_the_plan_limit_counts_active_channels(caller, other):
    first = make_channel(caller, name="One")
    make_channel(caller, name="Two")
    assert_error(
        caller.post("/v1/channels", json={"name": "Three", "type": "website"}),
        403,
        "PLAN_LIMIT_REACHED",
        "2",
    )
    make_channel(other, name="Three")  # per workspace
    assert caller.delete(f"/v1/channels/{first['id']}").status_code == 204
    make_channel(caller, name="Three")
