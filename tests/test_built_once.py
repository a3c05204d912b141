"""replies.built.BuiltOnce: a value is built by one caller at a time; one
asking meanwhile waits for that build (an index of a large training takes
seconds, in steps other requests run between)."""

import threading
import time

import pytest

from agent_platform.replies import knowledge, knowledge_index
from agent_platform.replies.built import BuiltOnce


def test_callers_asking_during_a_build_wait_for_it_instead_of_building_again():
    kept, builds, values = BuiltOnce(4), [], []

    def build():
        builds.append(1)
        time.sleep(0.2)
        return "index"

    ask = lambda: values.append(kept.get("k", build))  # noqa: E731
    callers = [threading.Thread(target=ask) for _ in range(5)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert (len(builds), values) == (1, ["index"] * 5)


def test_a_failed_build_is_tried_again_by_the_next_caller_and_the_oldest_goes_first():
    kept = BuiltOnce(2)
    with pytest.raises(ValueError):
        kept.get("k", lambda: (_ for _ in ()).throw(ValueError("no")))
    assert kept.get("k", lambda: 1) == 1
    kept.get("other", lambda: 2)
    kept.get("k", lambda: 0)  # used again: the newest
    kept.get("third", lambda: 3)
    assert list(kept.items) == ["k", "third"]


def test_an_agent_keeps_one_index_and_one_analysis_per_training_whatever_the_edits():
    # Every edit of a training built a new index, and the old ones were kept
    # (up to 64, each some 22 MB a million characters of text).
    knowledge_index.clear_caches()
    text = {"id": "t1", "type": "text", "status": "ready", "title": "Parking"}
    qa = {"id": "q1", "type": "qa", "status": "ready", "question": "Opening hours?"}
    for edit in range(5):
        edited = {**text, "content": f"Park at the Oak lot, space {edit}."}
        trainings = [edited, {**qa, "answer": "9-5"}]
        decision = knowledge.decide("where do I park", trainings, "en", owner=("trainings", "a1"))
        assert decision.training_id == "t1"
    knowledge.decide("opening hours?", [{**qa, "answer": "9-5"}], "en", owner=("trainings", "a2"))
    assert len(knowledge_index._INDEXES.items) == 2  # one per owner
    assert len(knowledge_index._UNITS.items) == 2  # t1's latest, q1
