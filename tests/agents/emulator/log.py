"""The JSON log of everything the provider and the relay saw, served at
GET /_log. One process and one monotonic clock, so relay and provider times
subtract into condense's added latency."""

import threading
import time


def now_ms():
    return time.monotonic_ns() / 1e6


class Log:
    def __init__(self):
        self._lock = threading.Lock()
        self._entries = []
        self.session = "none"
        self.relay_target = None

    def add(self, entry):
        """Appends `entry` (a dict, completed later in place) and returns its id."""
        with self._lock:
            entry["id"] = len(self._entries)
            entry["session"] = self.session
            self._entries.append(entry)
            return entry["id"]

    def entries(self, session=None):
        with self._lock:
            return [dict(e) for e in self._entries if session in (None, e["session"])]
