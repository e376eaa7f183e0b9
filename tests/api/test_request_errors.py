"""Request errors a person can act on, the same on every body endpoint, over a real socket:
JSON syntax errors say what and where, non-UTF-8 bodies name the byte, a missing or wrong
Content-Type gets 415, a wrong method 405 with Allow; nothing is registered by any of them."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.harness import ServedApp

BODY_ENDPOINTS = [
    ("POST", "/v1/schemas/generate"),
    ("POST", "/v1/tables/check"),
    ("POST", "/v1/tables/register"),
    ("POST", "/v1/topics/tidb_shop_t/encode"),
    ("POST", "/v1/decode"),
    ("POST", "/v1/convert/canal-json"),
    ("PUT", "/v1/subjects/tidb_shop_t-value/compatibility"),
]
JSON = {"content-type": "application/json"}


def _send(served: ServedApp, method: str, path: str, body: bytes,
          headers: dict[str, str]) -> httpx.Response:
    return served.http.request(method, served.url + path, content=body, headers=headers)


def _nothing_registered(served: ServedApp) -> None:
    assert served.http.get(served.url + "/v1/subjects").json() == []


@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS)
def test_a_json_syntax_error_says_what_and_where(served: ServedApp, method: str,
                                                 path: str) -> None:
    answer = _send(served, method, path, b'{"ddl": "CREATE TABLE a.t (id INT)",\n}', JSON)
    assert answer.status_code == 422
    problem = answer.json()
    assert problem["code"] == "invalid_json"
    assert (problem["position"], problem["line"], problem["column"]) == (35, 1, 36)  # the comma
    assert "trailing comma" in problem["detail"]
    _nothing_registered(served)


@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS)
def test_a_body_that_is_not_utf8_names_the_byte(served: ServedApp, method: str,
                                                path: str) -> None:
    answer = _send(served, method, path, b'{"ddl": "CREATE TABLE a.t\xfe"}', JSON)
    assert answer.status_code == 422
    assert answer.json()["code"] == "invalid_json"
    assert answer.json()["byte_offset"] == 25
    _nothing_registered(served)


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "application/+json"])
@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS)
def test_a_missing_or_wrong_content_type_gets_415(served: ServedApp, method: str, path: str,
                                                  content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    body = b'{"ddl": "CREATE TABLE a.t (id INT PRIMARY KEY)"}'
    answer = _send(served, method, path, body, headers)
    assert answer.status_code == 415
    problem = answer.json()
    assert problem["code"] == "unsupported_media_type"
    assert "application/json" in problem["accepted"]
    _nothing_registered(served)


def test_json_with_a_charset_or_a_json_suffix_is_accepted(served: ServedApp) -> None:
    body = b'{"ddl": "CREATE TABLE a.t (id INT PRIMARY KEY)"}'
    for media in ("application/json; charset=utf-8", "application/problem+json"):
        answer = _send(served, "POST", "/v1/schemas/generate", body, {"content-type": media})
        assert answer.status_code == 200, answer.text


def test_decode_takes_raw_bytes_as_octet_stream_only_there(served: ServedApp) -> None:
    raw = {"content-type": "application/octet-stream"}
    assert _send(served, "POST", "/v1/decode", b"\x00\x00", raw).json()["code"] == \
        "invalid_messages"
    answer = _send(served, "POST", "/v1/schemas/generate", b"\x00\x00", raw)
    assert answer.status_code == 415


def test_media_types_are_case_insensitive(served: ServedApp) -> None:
    raw = {"content-type": "Application/Octet-Stream"}  # RFC 9110 §8.3.1
    problem = _send(served, "POST", "/v1/decode", b"\x00\x00", raw).json()
    assert (problem["code"], problem["errors"][0]["offset"]) == ("invalid_messages", 2)
    body = b'{"ddl": "CREATE TABLE a.t (id INT PRIMARY KEY)"}'
    answer = _send(served, "POST", "/v1/schemas/generate", body,
                   {"content-type": "APPLICATION/JSON; Charset=UTF-8"})
    assert answer.status_code == 200, answer.text


def test_a_body_over_the_limit_is_a_problem_like_any_other(tmp_path: Path) -> None:
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING",
                        max_body_bytes=1024)
    small = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    try:
        answer = small.http.post(small.url + "/v1/tables/register", content=b" " * 1025,
                            headers=JSON)
    finally:
        small.stop()
    assert (answer.status_code, answer.headers["content-type"]) == \
        (413, "application/problem+json")
    detail = "the request body is over the limit of 1024 bytes (FLATAVRO_MAX_BODY_BYTES)"
    assert answer.json() == {
        "type": "urn:flatavro:problem:body_too_large", "title": "Body too large",
        "status": 413, "code": "body_too_large", "instance": "/v1/tables/register",
        "message": detail, "detail": detail, "limit": 1024}


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("GET", "/v1/tables/check", "POST"),
    ("DELETE", "/v1/decode", "POST"),
    ("POST", "/healthz", "GET"),
    ("POST", "/v1/subjects/tidb_shop_t-value/compatibility", "DELETE, GET, PUT"),  # 3 routes
    ("PATCH", "/v1/subjects/tidb_shop_t-value/versions/1", "DELETE, GET"),
])
def test_405_names_the_allowed_methods(served: ServedApp, method: str, path: str,
                                       allow: str) -> None:
    answer = served.http.request(method, served.url + path)
    assert answer.status_code == 405
    assert answer.json()["code"] == "method_not_allowed"
    assert answer.headers["allow"] == allow


def test_405_on_the_embedded_registry_names_the_allowed_methods(served: ServedApp) -> None:
    answer = served.http.delete(served.url + "/registry/schemas/ids/1")
    assert answer.status_code == 405
    assert answer.json()["error_code"] == 405  # Confluent's error shape under /registry
    assert answer.headers["allow"] == "GET, HEAD"
    answer = served.http.put(served.url + "/registry/subjects/tidb_shop_t-value/versions")
    assert answer.headers["allow"] == "DELETE, GET, HEAD, POST"  # every route at the path


def test_a_field_error_still_names_the_field(served: ServedApp) -> None:
    answer = _send(served, "POST", "/v1/tables/check", b'{"ddl": 5}', JSON)
    assert answer.status_code == 422
    problem = answer.json()
    assert problem["code"] == "invalid_request"
    assert [e["location"] for e in problem["errors"]] == ["body/ddl"]


@pytest.mark.parametrize("version", ["0", "-2", "01", "x"])
def test_a_version_the_spec_refuses_is_refused(served: ServedApp, version: str) -> None:
    answer = served.http.get(f"{served.url}/v1/subjects/tidb_shop_t-value/versions/{version}")
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["location"] == "path/version"
