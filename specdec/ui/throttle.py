"""How often a streaming callback may send a heavy update (tokens, plots)."""
from __future__ import annotations

import time


class Throttle:
    """True at most once per `interval_s` (the first call is always True)."""

    def __init__(self, interval_s: float, clock=time.monotonic):
        self.interval_s, self.clock, self.last = interval_s, clock, None

    def ready(self) -> bool:
        now = self.clock()
        if self.last is not None and now - self.last < self.interval_s:
            return False
        self.last = now
        return True
