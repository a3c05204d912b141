"""A sender that talks to no network, for tests and local trials.

It records what it was asked to send and answers with ids fake-1, fake-2, ...
Queue errors with `fail_next(SendError(...))` to exercise failures.
"""

import itertools
import threading

from .senders import SendResult


class FakeSender:
    def __init__(self):
        self.sent = []
        self._errors = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def fail_next(self, error):
        """The next send raises `error` (a SendError)."""
        self._errors.append(error)

    def send(self, channel, message):
        with self._lock:
            if self._errors:
                raise self._errors.pop(0)
            external_id = f"fake-{next(self._ids)}"
            self.sent.append((channel.id, message.id, external_id))
            return SendResult(external_id=external_id)
