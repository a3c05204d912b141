"""Watching gevent's loop from a test: does another greenlet run while one works?"""

import time

import gevent


def ticks_beside(work):
    """(`work()`'s result, run in a greenlet, and the times another greenlet
    woke meanwhile, about every millisecond while the loop was free)."""
    ticks = []

    def ticker():
        while True:
            ticks.append(time.monotonic())
            gevent.sleep(0.001)

    other = gevent.spawn(ticker)
    gevent.sleep(0)
    result = gevent.spawn(work).get()
    other.kill()
    return result, ticks
