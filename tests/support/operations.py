"""Schemathesis, one pytest item per API operation.

`schema.parametrize()` expands a test into one item per operation, but on pytest 9 those
items all get the test function's node id (Function builds it from `originalname`, which
Schemathesis sets to the bare function name). pytest-xdist's file and scope schedulers key
their work by node id, so under `-n 2 --dist loadfile` they ran one operation of each
document and dropped the others without a word. Here a test is parametrized with
`pytest.mark.parametrize` over `operation_params(schema)` (ids like
`GET /subjects/{subject}/versions`) and calls `run_operation`, which builds the very Hypothesis
test the Schemathesis plugin builds for that operation (same generation modes, schema
examples, coverage cases, configuration and the test's `@settings`) and runs it, with the
plugin's handling of its outcomes. An operation that fails to load is an item that fails with
Schemathesis' error; a document with no operations is a failing item too.
"""

from __future__ import annotations

import unittest
from collections.abc import Callable
from typing import Any

import pytest
from _pytest.mark import ParameterSet
from hypothesis.errors import FailedHealthCheck, Unsatisfiable
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.control import SkipTest
from schemathesis.core.errors import (
    SERIALIZERS_SUGGESTION_MESSAGE,
    InvalidHeadersExample,
    InvalidRegexPattern,
    InvalidSchema,
    SerializationNotPossible,
)
from schemathesis.core.failures import FailureGroup, as_reported_failure
from schemathesis.core.result import Ok
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.generation.hypothesis.builder import (
    InvalidHeadersExampleMark,
    InvalidRegexMark,
    MissingPathParameters,
    NonSerializableMark,
    UnsatisfiableExampleMark,
    UnserializablePayloadMark,
)
from schemathesis.generation.hypothesis.reporting import (
    build_health_check_error,
    build_unsatisfiable_error,
    ignore_hypothesis_output,
)
from schemathesis.pytest._test_builder import build_operation_test
from schemathesis.pytest.warnings import emit_unserializable_payload_warning
from schemathesis.python._constants.orchestrator import make_constants_value_source
from schemathesis.schemas import APIOperation, BaseSchema

load_all_checks()
ALL_CHECKS = [c for c in CHECKS.get_all() if callable(c) and not isinstance(c, type)]
"""Every registered Schemathesis check (the service documents' runs)."""
# positive_data_acceptance: 422 is the documented answer to a body that fits the document
# but not the facts it cannot state (a DDL that does not parse, a value that does not fit its
# column, a message that is not Confluent-framed, a table given neither as `table` nor `ddl`).
# Every other status still fails the check.
SERVICE_CONFIG = SchemathesisConfig.from_dict({"checks": {"positive_data_acceptance": {
    "expected-statuses": ["2xx", "401", "403", "404", "409", "422", "429", "5xx"]}}})
"""The config of the service documents' runs (plain and keyed)."""
NO_OPERATIONS = "no operations"


def operation_params(schema: BaseSchema) -> list[ParameterSet]:
    """One `pytest.param` per operation of `schema`, its id the operation's label (`GET
    /path`): the APIOperation, or the InvalidSchema of an operation that failed to load."""
    params = []
    for result in schema.get_all_operations():
        if isinstance(result, Ok):
            operation = result.ok()
            params.append(pytest.param(operation, id=operation.label))
        else:
            error = result.err()
            label = f"{error.method.upper()} {error.path}" if error.method else error.path
            params.append(pytest.param(error, id=f"{label or 'document'} (invalid)"))
    return params or [pytest.param(NO_OPERATIONS, id=NO_OPERATIONS)]


_FEEDBACK: dict[int, tuple[BaseSchema, FeedbackSources]] = {}


def _feedback(schema: BaseSchema) -> FeedbackSources:
    """The plugin's feedback (the constants of the schema's app), made once per schema."""
    if id(schema) not in _FEEDBACK:
        constants = make_constants_value_source(schema)
        _FEEDBACK[id(schema)] = (schema, FeedbackSources(constants_value_source=constants))
    return _FEEDBACK[id(schema)][1]


def run_operation(operation: APIOperation | InvalidSchema | str,
                  check: Callable[[Any], None]) -> None:
    """Run `check(case)` (decorated with `@settings`) on the cases Schemathesis generates for
    `operation`, as `schema.parametrize()` would; fails when the operation did not load."""
    __tracebackhide__ = True
    if isinstance(operation, InvalidSchema):
        raise operation
    if not isinstance(operation, APIOperation):
        pytest.fail(f"the document has {operation}")
    test = build_operation_test(config=operation.schema.config, operation=operation,
                                test_func=check, given_kwargs={},
                                feedback=_feedback(operation.schema))
    try:
        with ignore_hypothesis_output():
            test()
    except FailureGroup as exc:
        raise as_reported_failure(exc) from None
    except (SkipTest, unittest.SkipTest):
        error = _skipped_examples_error(test)
        if error is not None:
            raise error from None
        raise
    except FailedHealthCheck as exc:
        raise build_health_check_error(operation, exc, with_tip=True) from None
    except Unsatisfiable:
        raise build_unsatisfiable_error(operation, with_tip=True,
                                        filter_tracker=operation.filter_case_tracker) from None
    unserializable_payload = UnserializablePayloadMark.get(test)
    if unserializable_payload is not None:
        emit_unserializable_payload_warning(unserializable_payload)
    invalid_headers = InvalidHeadersExampleMark.get(test)
    if invalid_headers is not None:
        raise InvalidHeadersExample.from_headers(invalid_headers)
    missing_path_parameters = MissingPathParameters.get(test)
    if missing_path_parameters:
        raise missing_path_parameters


def _skipped_examples_error(test: Callable[..., Any]) -> Exception | None:
    """The plugin's reading of a skipped test: examples it could not use are an error."""
    if UnsatisfiableExampleMark.is_set(test):
        return Unsatisfiable("Failed to generate test cases from examples for this API operation")
    non_serializable = NonSerializableMark.get(test)
    if non_serializable is not None:
        media_types = ", ".join(non_serializable.media_types)
        return SerializationNotPossible(
            "Failed to generate test cases from examples for this API operation because of"
            f" unsupported payload media types: {media_types}\n{SERIALIZERS_SUGGESTION_MESSAGE}",
            media_types=non_serializable.media_types)
    invalid_regex = InvalidRegexMark.get(test)
    if invalid_regex is not None:
        return InvalidRegexPattern.from_jsonschema_rs_error(invalid_regex)
    invalid_headers = InvalidHeadersExampleMark.get(test)
    if invalid_headers is not None:
        return InvalidHeadersExample.from_headers(invalid_headers)
    return None
