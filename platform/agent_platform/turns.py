"""Long work done in steps, other connections served between them."""

import time

# The gevent worker patches time.sleep into gevent's: a sleep this short
# ends only after the loop's next poll, so every connection that is ready is
# served first (a sleep of 0 may end before that poll). Anywhere else (the
# CLI, Flask's own server, a thread) it is a pause of some microseconds.
NEXT_POLL = 1e-6


# How long work that calls give_way_if_due keeps the loop between turns.
TURN_SECONDS = 0.002
_last_turn = [0.0]


def give_way_if_due():
    """Let the server's other connections have their turn, when TURN_SECONDS
    have passed since the last one given here: cheap enough to call at every
    small step of long work (an index of a large text)."""
    now = time.monotonic()
    if now - _last_turn[0] >= TURN_SECONDS:
        time.sleep(NEXT_POLL)
        _last_turn[0] = time.monotonic()
