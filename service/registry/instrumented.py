"""`InstrumentedRegistry`: any `SchemaRegistry`, with every call reported (for metrics)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["InstrumentedRegistry"]


class InstrumentedRegistry:
    """Delegates to `inner`; calls `on_call(operation)` before each registry coroutine."""

    def __init__(self, inner: Any, on_call: Callable[[str], None]) -> None:
        self._inner, self._on_call = inner, on_call

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        @functools.wraps(attribute)
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self._on_call(name)
            return await attribute(*args, **kwargs)

        return counted
