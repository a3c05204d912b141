"""Users' patterns run on RE2 in linear time: the classic catastrophic
patterns are accepted and match a hostile 10 kB message in milliseconds,
through the matcher and through the reply engine; what RE2 cannot run is
refused when the rule is written, with the field and the reason."""

import logging
import time

import pytest

from agent_platform import patterns
from agent_platform.models import TransferRule
from agent_platform.services import routing
from conftest import assert_error
from conversations_helpers import data
from replies_helpers import (
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    make_agent,
    run_replies,
    texts,
)

CATASTROPHIC = [
    r"(a|a)*$",
    r"(a|aa)+$",
    r"(\d|\w)+$",
    r"(.*a){12}$",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(x+x+)+y",
    r"(\w+\s?)*$",
    r"(\s*\w*)*@",
    r"((ab)*|(ba)*)*c",
    r"(.*){49}",  # near the size limit: the slowest a pattern may be
]
# What makes backtracking engines explode: long runs that almost match.
HOSTILE = ("a" * 4000) + "!" + ("1a " * 1000) + ("x" * 3000) + "!"
# CPU time of the matching thread: what a pattern costs, whatever else the
# machine runs meanwhile (wall time failed under a loaded full suite).
LIMIT_SECONDS = 0.050


def rule(caller, agent_id, pattern, **values):
    body = {"name": "r", "match_type": "regex", "pattern": pattern, "action": "handoff"}
    return caller.post(f"/v1/agents/{agent_id}/transfer-rules", json={**body, **values})


@pytest.fixture
def agent_id(caller, fake):  # noqa: F811
    return make_agent(caller)


def test_the_hostile_message_is_ten_kilobytes():
    assert len(HOSTILE.encode()) >= 10_000


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_a_catastrophic_pattern_is_saved_and_matches_in_milliseconds(caller, agent_id, pattern):
    data(rule(caller, agent_id, pattern), 201)
    started = time.thread_time()
    routing.match_transfer_rule(agent_id, HOSTILE)
    assert time.thread_time() - started < LIMIT_SECONDS
    compiled = patterns.compiled(pattern)
    started = time.thread_time()
    compiled.search(HOSTILE)  # the whole 10 kB, not only the part rules look at
    assert time.thread_time() - started < LIMIT_SECONDS


def test_the_reply_engine_answers_a_hostile_message_promptly(caller, agent_id, fake):  # noqa: F811
    for pattern in CATASTROPHIC:
        data(rule(caller, agent_id, pattern, priority=5, message="not this"), 201)
    data(rule(caller, agent_id, r"refund\s+#\d+", priority=1, message="A person will help."), 201)
    channel = agent_channel(caller, agent_id)
    message = customer_says(channel["id"], HOSTILE + " refund #42", at(0))
    started = time.perf_counter()
    run_replies(at(5))
    assert time.perf_counter() - started < 2.0
    # The hostile part is cut at routing.REGEX_CHARS: the first rule that matches there wins.
    assert texts(message.conversation_id) == ["not this"]


def test_rules_match_any_case_in_any_script(caller, agent_id):
    data(rule(caller, agent_id, r"ÉCOLE|straße"), 201)
    assert routing.match_transfer_rule(agent_id, "une école à Paris") is not None
    assert routing.match_transfer_rule(agent_id, "STRASSE") is None  # no expansion, as re
    assert routing.match_transfer_rule(agent_id, "Straße") is not None


@pytest.mark.parametrize(
    "pattern, reason",
    [
        (r"order(?=#)", "look-ahead"),
        (r"order(?!#)", "look-ahead"),
        (r"(?<=#)\d+", "look-behind"),
        (r"(?<!#)\d+", "look-behind"),
        (r"(a)\1", "back-references"),
        (r"a++", "possessive"),
        (r"(unclosed", "not a valid regular expression"),
        (r"(.*){60}", "too complex"),
        (r"[\w\s]{1,1000}x", "too complex"),
    ],
)
def test_what_re2_cannot_run_is_refused_with_the_reason(caller, agent_id, pattern, reason):
    error = assert_error(rule(caller, agent_id, pattern), 400, "VALIDATION_ERROR", "pattern")
    assert reason in error["message"] and "RE2" in error["message"]
    assert TransferRule.select().count() == 0


def test_an_update_is_checked_too(caller, agent_id):
    saved = data(rule(caller, agent_id, r"order\s*#?\d+"), 201)
    path = f"/v1/agents/{agent_id}/transfer-rules/{saved['id']}"
    assert_error(caller.patch(path, json={"pattern": r"(?<=#)\d+"}), 400, "VALIDATION_ERROR")
    assert TransferRule.get_by_id(saved["id"]).pattern == r"order\s*#?\d+"


def test_a_stored_pattern_re2_refuses_is_skipped_with_a_warning(caller, agent_id, caplog):
    # Saved before patterns ran on RE2 (written here straight to the table).
    data(rule(caller, agent_id, r"order", priority=1), 201)
    TransferRule.update(pattern=r"order(?=#)").execute()
    data(rule(caller, agent_id, r"refund", priority=2), 201)
    with caplog.at_level(logging.WARNING, logger="agent_platform.routing"):
        matched = routing.match_transfer_rule(agent_id, "order #1, refund please")
    assert matched.pattern == "refund"
    assert "look-ahead" in caplog.text
