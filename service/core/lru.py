"""`LRU`: a bounded mapping that forgets the least recently used entry (schema caches).

Safe to share between the event loop and the worker threads large requests run in.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

__all__ = ["LRU"]


class LRU:
    """A bounded mapping; `get` refreshes an entry, `put` evicts the oldest past `size`."""

    def __init__(self, size: int) -> None:
        self._size, self._data = size, OrderedDict[Any, Any]()
        self._lock = threading.Lock()  # a check-then-move must not interleave with an evict

    def get(self, key: Any) -> Any:
        """The value under `key`, or None."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            return None

    def put(self, key: Any, value: Any) -> None:
        """Store `value` under `key`."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def pop(self, key: Any) -> None:
        """Forget `key` (no error when absent)."""
        with self._lock:
            self._data.pop(key, None)
