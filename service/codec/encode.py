"""Batch encode: plain-JSON change records -> Confluent-framed key/value messages for a topic.

docs/flat-avro.md §6: INSERT/UPDATE -> key + value; DELETE -> key (from ``old_row``, else
``row``) + null value; an UPDATE whose key columns changed (``old_row`` given) -> DELETE of the
old key + INSERT. The whole batch is checked before anything is output: one bad record makes
the call fail with every bad record's index, column and reason, and no messages.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from service.codec.body import parse_json_body, text_encoder
from service.codec.errors import InvalidRecordsError, InvalidRequestError
from service.codec.offload import run_cpu
from service.codec.resolver import SchemaResolver, TopicSchemas
from service.codec.writer import ChangeWriter
from service.core.errors import RowValidationError

__all__ = ["EncodedBatch", "encode_batch"]

_OPS = ("insert", "update", "delete")


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """The JSON response body and how many records and messages it holds."""

    body: bytes
    records: int
    messages: int


async def encode_batch(resolver: SchemaResolver, topic: str, *, body: bytes) -> EncodedBatch:
    """Encode a batch request body (see docs/architecture.md) against the topic's latest schemas.

    Raises:
        InvalidRequestError: the body is not the expected JSON shape.
        InvalidRecordsError: one or more records are invalid (all listed; nothing output).
        SubjectNotFoundError: the topic has no registered value schema.
    """
    document = await run_cpu(len(body), parse_json_body, body)
    to_text = text_encoder(document)
    records = document.get("records")
    if not isinstance(records, list):
        raise InvalidRequestError("`records` must be a list of change records",
                                  field="records")
    schemas = await resolver.topic(topic)
    return await run_cpu(len(body), functools.partial(_encode_records, schemas, records,
                                                      to_text=to_text))


def _encode_records(schemas: TopicSchemas, records: list[Any], *,
                    to_text: Callable[[bytes], str]) -> EncodedBatch:
    """The CPU part of `encode_batch`: every record checked and encoded, or all refused."""
    writer = _BatchWriter(schemas, to_text)
    errors: list[dict[str, Any]] = []
    for index, record in enumerate(records):
        try:
            writer.add(index, record)
        except RowValidationError as exc:
            errors.extend(dict(e.to_dict(), record_index=index) for e in exc.errors)
        except _RecordShapeError as exc:
            errors.append({"code": "invalid_record", "message": str(exc),
                           "record_index": index, "field": exc.field})
    if errors:
        for error in errors:
            error["message"] = f"record {error['record_index']}: {error['message']}"
        raise InvalidRecordsError(errors)
    key_id = None if schemas.key is None else schemas.key.registered.wire_id
    response = {"topic": schemas.topic, "messages": writer.messages, "key_schema_id": key_id,
                "value_schema_id": schemas.value.registered.wire_id}
    return EncodedBatch(orjson.dumps(response), len(records), len(writer.messages))


class _RecordShapeError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class _BatchWriter:
    """Accumulates the messages of one batch."""

    def __init__(self, schemas: TopicSchemas, to_text: Callable[[bytes], str]) -> None:
        self.messages: list[dict[str, Any]] = []
        self._changes = ChangeWriter(schemas)
        self._text = to_text

    def add(self, index: int, record: Any) -> None:
        """Check one record and add its messages (`index` is its place in the batch).

        Raises:
            RowValidationError: the record's columns that are invalid.
            _RecordShapeError: the record is not a change record.
        """
        change = _change_of(record)
        text = self._text
        for _, key, value in self._changes.write(change.op, change.row, old_row=change.old_row,
                                                 commit_ts=change.commit_ts):
            self.messages.append({"key": None if key is None else text(key),
                                  "value": None if value is None else text(value),
                                  "record_index": index})


@dataclass(frozen=True, slots=True)
class _Change:
    """One change record of the request, its shape checked (`row` None: a delete that names
    its `old_row` only)."""

    op: str
    row: dict[str, Any] | None
    old_row: dict[str, Any] | None
    commit_ts: int


def _change_of(record: Any) -> _Change:
    if not isinstance(record, dict):
        raise _RecordShapeError("a record must be a JSON object", "record")
    op = record.get("op")
    if op not in _OPS:
        raise _RecordShapeError(f"`op` must be insert, update or delete, not {op!r}", "op")
    row, old_row = record.get("row"), record.get("old_row")
    if old_row is not None and not isinstance(old_row, dict):
        raise _RecordShapeError("`old_row` must be an object of column values", "old_row")
    if not isinstance(row, dict) and not (op == "delete" and old_row is not None):
        raise _RecordShapeError("`row` must be an object of column values", "row")
    commit_ts = record.get("commit_ts", 0)
    if type(commit_ts) is not int or not 0 <= commit_ts < 1 << 63:
        raise _RecordShapeError("`commit_ts` must be a TiDB TSO (an integer >= 0)",
                                "commit_ts")
    return _Change(str(op), row if isinstance(row, dict) else None, old_row, commit_ts)
