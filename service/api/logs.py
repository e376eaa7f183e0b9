"""Structured logs: one JSON object per line, with the request id of the current request."""

from __future__ import annotations

import contextvars
import logging
import sys
import time

import orjson

__all__ = ["request_id", "configure", "JsonFormatter"]

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id",
                                                                        default=None)
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime",
                                                             "color_message"}


class JsonFormatter(logging.Formatter):
    """Formats a record as ``{"ts", "level", "logger", "message", "request_id", ...extra}``."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line."""
        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                  + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = request_id.get()
        if rid:
            entry["request_id"] = rid
        entry.update((k, v) for k, v in record.__dict__.items() if k not in _STANDARD)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure(level: str) -> None:
    """Send the ``flatavro`` and ``uvicorn`` loggers to stderr as JSON lines at `level`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("flatavro", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    logging.getLogger("uvicorn.access").disabled = True  # our access line has the request id
