"""`LRU`: a bounded mapping that forgets the least recently used entry (schema caches)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["LRU"]


class LRU:
    """A bounded mapping; `get` refreshes an entry, `put` evicts the oldest past `size`."""

    def __init__(self, size: int) -> None:
        self._size, self._data = size, OrderedDict[Any, Any]()

    def get(self, key: Any) -> Any:
        """The value under `key`, or None."""
        if key in self._data:
            self._data.move_to_end(key)
            return self._data[key]
        return None

    def put(self, key: Any, value: Any) -> None:
        """Store `value` under `key`."""
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)

    def pop(self, key: Any) -> None:
        """Forget `key` (no error when absent)."""
        self._data.pop(key, None)
