"""The client's dialect handling, against small servers that answer as Apicurio 2.6 and as
Confluent do where they differ (the external-registry suite, tests/registries/, runs the real
Apicurio)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from service.registry.client import HttpSchemaRegistry, RegistryClientConfig
from service.registry.compatibility import CompatibilityLevel
from service.registry.errors import (
    RegistryAuthError,
    RegistryUnsupportedError,
    SubjectConfigNotFoundError,
)
from service.registry.model import RegistryMode
from tests.support.harness import run, serving

Answer = tuple[int, Any]


def registry_answering(answers: dict[str, Answer]) -> tuple[Starlette, list[str]]:
    """A server answering "METHOD /path" from `answers` (else 404 as Apicurio's RESTEasy does);
    also records what it was asked."""
    asked: list[str] = []

    async def answer(request: Request) -> Response:
        key = f"{request.method} {request.url.path}"
        if key != "GET /":  # the test server's own start-up check
            asked.append(key)
        status, body = answers.get(key, (404, {
            "error_code": 0, "message": "RESTEASY003210: Could not find resource"}))
        return JSONResponse(body, status_code=status)

    methods = ["GET", "POST", "PUT", "DELETE"]
    return Starlette(routes=[Route("/{path:path}", answer, methods=methods)]), asked


def with_client(answers: dict[str, Answer], work: Callable[[HttpSchemaRegistry], Any]
                ) -> tuple[Any, list[str]]:
    app, asked = registry_answering(answers)
    with serving(app) as served:
        sr = HttpSchemaRegistry(RegistryClientConfig(url=served.url, retry_budget=0))
        return run(work(sr)), asked


GLOBAL_BACKWARD = {"GET /config": (200, {"compatibilityLevel": "BACKWARD"})}
NO_ARTIFACT = (404, {"error_code": 40401, "message": "No artifact with ID 'x' was found."})


def test_a_subject_it_does_not_have_has_the_global_level() -> None:
    level, _ = with_client({**GLOBAL_BACKWARD, "GET /config/t-value": NO_ARTIFACT},
                           lambda sr: sr.get_compatibility("t-value", default_to_global=True))
    assert level is CompatibilityLevel.BACKWARD


def test_none_for_a_subject_without_a_rule_reads_as_unset_where_unknown_subjects_are_40401(
        ) -> None:
    answers = {**GLOBAL_BACKWARD, "GET /config/t-value": (200, {"compatibilityLevel": "NONE"}),
               "GET /config/flatavro-dialect-probe.no-such-subject": NO_ARTIFACT}

    async def work(sr: HttpSchemaRegistry) -> Any:
        effective = await sr.get_compatibility("t-value", default_to_global=True)
        own = await sr.configured_compatibility("t-value")
        with pytest.raises(SubjectConfigNotFoundError):
            await sr.get_compatibility("t-value")
        return effective, own, sr.dialect.unset_level_reads_as_none

    (effective, own, learnt), asked = with_client(answers, work)
    assert (effective, own, learnt) == (CompatibilityLevel.BACKWARD, None, True)
    assert asked.count("GET /config/flatavro-dialect-probe.no-such-subject") == 1  # once


@pytest.mark.parametrize("probe", [
    (404, {"error_code": 40408, "message": "Subject does not have subject-level config"}),
    (403, {"error_code": 40301, "message": "User is denied operation Read"}),
], ids=["40408", "denied"])
def test_none_stays_none_on_a_registry_that_tells_unset_from_none(probe: Answer) -> None:
    answers = {**GLOBAL_BACKWARD, "GET /config/t-value": (200, {"compatibilityLevel": "NONE"}),
               "GET /config/flatavro-dialect-probe.no-such-subject": probe}
    level, _ = with_client(answers,
                           lambda sr: sr.get_compatibility("t-value", default_to_global=True))
    assert level is CompatibilityLevel.NONE


def test_no_mode_means_readwrite_and_setting_one_is_unsupported() -> None:
    async def work(sr: HttpSchemaRegistry) -> Any:
        got = (await sr.get_mode(), await sr.get_mode("t-value"),
               await sr.configured_mode(), await sr.configured_mode("t-value"))
        with pytest.raises(RegistryUnsupportedError) as err:
            await sr.set_mode(RegistryMode.READONLY)
        return got, err.value

    (modes, error), asked = with_client(
        {"GET /mode": (404, {"error_code": 0, "message": "Operation not supported."})}, work)
    assert modes == (RegistryMode.READWRITE, RegistryMode.READWRITE, RegistryMode.READWRITE, None)
    assert asked.count("GET /mode") == 1  # learnt once
    assert error.code == "registry_unsupported" and error.details["operation"] == "PUT /mode"
    assert "answered 404 (0): RESTEASY003210" in error.message


def test_a_check_of_a_new_subject_is_compatible_and_reasons_come_from_reason() -> None:
    schema = json.dumps({"type": "record", "name": "r", "fields": []})
    refusal = (200, {"is_compatible": False, "reason": "Incompatible artifact: b at /fields/1"})

    async def work(sr: HttpSchemaRegistry) -> Any:
        return (await sr.check_compatibility("new", schema),
                await sr.check_compatibility("new", schema, version="latest"),
                await sr.check_compatibility("old", schema, version="latest"))

    (new, new_latest, old), _ = with_client({
        "POST /compatibility/subjects/new/versions": NO_ARTIFACT,
        "POST /compatibility/subjects/new/versions/latest": (404, {
            "error_code": 40402, "message": "No version 'latest' found"}),
        "POST /compatibility/subjects/old/versions/latest": refusal}, work)
    assert new.compatible and new_latest.compatible
    assert not old.compatible
    assert [i.message for i in old.incompatibilities] == ["Incompatible artifact: b at /fields/1"]


def test_a_refused_credential_is_named_and_not_retried() -> None:
    async def work(sr: HttpSchemaRegistry) -> Any:
        with pytest.raises(RegistryAuthError) as err:
            await sr.subjects()
        return err.value

    error, asked = with_client({"GET /subjects": (401, {
        "error_code": 40101, "message": "Unauthorized"})}, work)
    assert "FLATAVRO_REGISTRY_USERNAME" in error.message and asked == ["GET /subjects"]
