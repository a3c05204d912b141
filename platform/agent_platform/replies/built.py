"""What the knowledge provider builds once and keeps: a small LRU map whose
values are built by one caller at a time. An index of a large training takes
seconds to build, in steps that let other requests run meanwhile; a second
message arriving then waits for that build instead of starting its own."""

import threading
from collections import OrderedDict


class BuiltOnce:
    """A thread-safe LRU map of at most `size` values, each built once per
    version: a value asked for in another version replaces the one kept
    (an edited training's analysis replaces the old one's)."""

    def __init__(self, size):
        self.size, self.items, self.lock = size, OrderedDict(), threading.Lock()
        self._building = {}  # key -> the Event set when its build ends

    def get(self, key, build, version=None):
        """The value kept under `key` in `version`, else `build()`'s, kept
        in its place. A caller finding it being built waits for that build."""
        while True:
            with self.lock:
                kept = self.items.get(key)
                if kept is not None and kept[0] == version:
                    self.items.move_to_end(key)
                    return kept[1]
                underway = self._building.get(key)
                if underway is None:
                    self._building[key] = threading.Event()
            if underway is None:
                return self._built(key, build, version)
            underway.wait()  # then kept, or failed: look again

    def clear(self):
        with self.lock:
            self.items.clear()

    def _built(self, key, build, version):
        try:
            value = build()
            with self.lock:
                self.items[key] = (version, value)
                self.items.move_to_end(key)
                while len(self.items) > self.size:
                    self.items.popitem(last=False)
            return value
        finally:
            with self.lock:
                self._building.pop(key).set()
