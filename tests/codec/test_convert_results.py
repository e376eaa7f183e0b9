"""The typed results of a conversion: a problem keeps index and reason apart and renders the
HTTP/CLI entry (``message N: `` prefix, key order) only in `to_dict`; skipped events and
outputs render as the response body has them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from service.cdc.events import ChangeEvent, EventKind
from service.codec.convert_results import MessageProblem, Output, Skipped, Unconvertible
from service.codec.errors import UnconvertibleMessagesError
from service.core.errors import Fix, InvalidInputError


class _NoSchema(InvalidInputError):
    code = "no_schema"


def test_a_problem_renders_the_batch_position_only_at_the_edge() -> None:
    problem = MessageProblem(3, InvalidInputError("bad column", column="c"))
    assert problem.reason == "bad column" and problem.indices == (3,)
    entry = problem.to_dict()
    assert entry == {"code": "invalid_input", "message": "message 3: bad column",
                     "column": "c", "message_index": 3}
    assert list(entry) == ["code", "message", "column", "message_index"]


def test_a_topic_problem_lists_the_messages_it_affects_last() -> None:
    error = _NoSchema("topic t has no registered schema", topic="t",
                      fix=[Fix.REGISTER_TABLE])
    problem = MessageProblem(1, error, topic="t", affected=(4, 6))
    assert problem.indices == (1, 4, 6)
    entry = problem.to_dict()
    assert list(entry) == ["code", "message", "topic", "fix", "message_index",
                           "affected_messages"]
    assert entry["affected_messages"] == [4, 6] and entry["fix"] == ["register_table"]
    other = MessageProblem(2, InvalidInputError("no such fact"), topic="u").to_dict()
    assert list(other) == ["code", "message", "message_index", "topic"]


def test_an_unconvertible_batch_is_the_error_http_and_the_cli_report() -> None:
    error = Unconvertible((MessageProblem(0, InvalidInputError("first")),
                           MessageProblem(2, InvalidInputError("again"), topic="t",
                                          affected=(5,)))).error()
    assert isinstance(error, UnconvertibleMessagesError)
    assert str(error) == "2 problem(s) in the messages: message 0: first (and 1 more)"
    body: dict[str, Any] = error.to_dict()
    assert body["failed_messages"] == [0, 2, 5] and body["converted"] == 0
    assert [e["message_index"] for e in body["errors"]] == [0, 2]


def test_skipped_events_and_outputs_render_as_the_response_body() -> None:
    event = ChangeEvent(EventKind.WATERMARK, None, None, 42, 7)
    assert Skipped.of(event).to_json() == {
        "source_index": 7, "kind": "watermark", "schema": None, "table": None,
        "commit_ts": 42, "reason": "a watermark/resolved event produces no flat-avro message"}
    assert Skipped.of(event, "said otherwise").reason == "said otherwise"
    schemas: Any = SimpleNamespace(topic="t", key=None, value=SimpleNamespace(
        registered=SimpleNamespace(id=9, wire_id=9)))
    assert Output(schemas, 5, 1, "insert", None, b"\x00ab").to_json() == {
        "topic": "t", "key": None, "value": "AGFi", "key_schema_id": None,
        "value_schema_id": 9, "op": "insert", "commit_ts": 5, "source_index": 1}
