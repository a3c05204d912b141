"""replies.built.BuiltOnce: a value is built by one caller at a time; one
asking meanwhile waits for that build (an index of a large training takes
seconds, in steps other requests run between)."""

import threading
import time

import pytest

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
