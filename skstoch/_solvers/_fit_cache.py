"""What one fit computes once for all its problems (one-vs-rest heads, targets)."""
import threading


class FitCache:
    """Values computed once per key and fit, thread-safe: one-vs-rest heads run in threads,
    and the first one to ask computes what the others then read."""

    def __init__(self):
        self._lock = threading.Lock()
        self._cache = {}

    def cached(self, key, compute):
        """``compute()`` the first time ``key`` is asked for, its stored value after."""
        with self._lock:
            if key not in self._cache:
                self._cache[key] = compute()
            return self._cache[key]
