"""The admin console's subject views over a real socket: one subject, the overview, versions'
schemas as JSON, diffs between versions, schemas by id and deleting a topic's subjects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.test_problems import TOPIC, problem
from tests.support.api import ORDERS_DDL
from tests.support.harness import ServedApp

KEY_SUBJECT, VALUE = f"{TOPIC}-key", f"{TOPIC}-value"
WITH_QTY = ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT")
INHERITED = {"compatibility": {"configured": None, "effective": "BACKWARD"},
             "mode": {"configured": None, "effective": "READWRITE"}}


@pytest.fixture
def http(served: ServedApp) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url) as client:
        yield client


def register(http: httpx.Client, ddl: str = ORDERS_DDL, **extra: Any) -> dict[str, Any]:
    answer = http.post("/v1/tables/register", json={"ddl": ddl, **extra})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.fixture
def two_versions(http: httpx.Client) -> tuple[dict[str, Any], dict[str, Any]]:
    """orders registered, then again with a nullable `qty` (value subject: versions 1, 2)."""
    return register(http), register(http, WITH_QTY)


def test_one_subject_at_a_glance(http: httpx.Client, two_versions: Any) -> None:
    first, second = two_versions
    assert http.get(f"/v1/subjects/{VALUE}").json() == {
        "subject": VALUE, "versions": [1, 2], "deleted_versions": [],
        "latest": {"version": 2, "id": second["value"]["id"]}, **INHERITED}
    assert http.put(f"/v1/subjects/{VALUE}/compatibility",
                    json={"compatibility": "FULL"}).status_code == 200
    assert http.put(f"/v1/subjects/{VALUE}/mode", json={"mode": "READONLY"}).status_code == 200
    facts = http.get(f"/v1/subjects/{VALUE}").json()
    assert (facts["compatibility"], facts["mode"]) == (
        {"configured": "FULL", "effective": "FULL"},
        {"configured": "READONLY", "effective": "READONLY"})


def test_soft_deleted_versions_show_with_deleted_true(http: httpx.Client,
                                                      two_versions: Any) -> None:
    first, second = two_versions
    assert http.delete(f"/v1/subjects/{VALUE}/versions/2").status_code == 200
    live = http.get(f"/v1/subjects/{VALUE}").json()
    assert (live["versions"], live["deleted_versions"], live["latest"]) == (
        [1], [], {"version": 1, "id": first["value"]["id"]})
    everything = http.get(f"/v1/subjects/{VALUE}", params={"deleted": True}).json()
    assert (everything["versions"], everything["deleted_versions"]) == ([1, 2], [2])
    assert http.delete(f"/v1/subjects/{VALUE}").status_code == 200
    problem(http.get(f"/v1/subjects/{VALUE}"), 404, "subject_not_found")
    gone = http.get(f"/v1/subjects/{VALUE}", params={"deleted": True}).json()
    assert (gone["versions"], gone["deleted_versions"], gone["latest"]) == ([1, 2], [1, 2], None)


def test_an_unknown_subject_is_404(http: httpx.Client) -> None:
    body = problem(http.get("/v1/subjects/nope-value"), 404, "subject_not_found")
    assert body["subject"] == "nope-value"


def test_the_overview_has_every_subject_in_one_call(http: httpx.Client,
                                                    two_versions: Any) -> None:
    first, second = two_versions
    assert http.get("/v1/subjects").json() == [KEY_SUBJECT, VALUE]
    assert http.get("/v1/subjects", params={"detail": True}).json() == [
        {"subject": KEY_SUBJECT, "versions": [1], "deleted_versions": [],
         "latest": {"version": 1, "id": first["key"]["id"]}, **INHERITED},
        {"subject": VALUE, "versions": [1, 2], "deleted_versions": [],
         "latest": {"version": 2, "id": second["value"]["id"]}, **INHERITED}]
    assert http.delete(f"/v1/subjects/{KEY_SUBJECT}").status_code == 200
    assert [s["subject"] for s in http.get("/v1/subjects?detail=true").json()] == [VALUE]
    with_deleted = http.get("/v1/subjects", params={"detail": True, "deleted": True}).json()
    assert [(s["subject"], s["latest"]) for s in with_deleted] == [
        (KEY_SUBJECT, None), (VALUE, {"version": 2, "id": second["value"]["id"]})]


def test_the_overview_of_an_empty_registry(http: httpx.Client) -> None:
    assert http.get("/v1/subjects", params={"detail": True}).json() == []


def test_a_version_has_its_schema_as_json_and_as_the_registrys_string(
        http: httpx.Client, two_versions: Any) -> None:
    mine = http.get(f"/v1/subjects/{VALUE}/versions/2").json()
    confluent = http.get(f"/registry/subjects/{VALUE}/versions/2").json()
    assert mine["schema_text"] == confluent["schema"]
    assert mine["schema"] == json.loads(confluent["schema"])
    assert mine["schema"]["fields"][-1]["name"] == "qty"
    topic = http.get(f"/v1/topics/{TOPIC}/schemas").json()
    assert topic["value"] == mine


def test_a_diff_names_each_changed_column_and_the_verdict(http: httpx.Client,
                                                          two_versions: Any) -> None:
    first, second = two_versions
    answer = http.get(f"/v1/subjects/{VALUE}/diff", params={"from": 1, "to": "latest"})
    assert answer.status_code == 200, answer.text
    int_type = {"type": "int", "connect.parameters": {"tidb_type": "INT"}}
    assert answer.json() == {
        "subject": VALUE,
        "from": {"version": 1, "id": first["value"]["id"]},
        "to": {"version": 2, "id": second["value"]["id"]},
        "changes": [{"change": "added", "column": "qty", "before": None,
                     "after": {"default": None, "name": "qty", "type": ["null", int_type]},
                     "message": "column `qty` was added: int [INT], nullable, default null"}],
        "compatibility": {"compatibility_level": "BACKWARD", "compatible": True,
                          "incompatibilities": []}}


def test_a_diff_explains_an_incompatible_pair(http: httpx.Client, two_versions: Any) -> None:
    strict = WITH_QTY.replace("qty INT", "qty INT NOT NULL, sku2 BIGINT NOT NULL")
    http.put(f"/v1/subjects/{VALUE}/compatibility", json={"compatibility": "NONE"})
    register(http, strict)
    http.put(f"/v1/subjects/{VALUE}/compatibility", json={"compatibility": "FULL_TRANSITIVE"})
    verdict = http.get(f"/v1/subjects/{VALUE}/diff", params={"from": 1, "to": 3}).json()
    assert [(c["change"], c["column"]) for c in verdict["changes"]] == [
        ("added", "qty"), ("added", "sku2")]
    assert (verdict["compatibility"]["compatibility_level"],
            verdict["compatibility"]["compatible"]) == ("FULL_TRANSITIVE", False)
    reasons = verdict["compatibility"]["incompatibilities"]
    assert {(r["type"], r["location"], r["version"], r["direction"]) for r in reasons} == {
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/5", 1, "new_reads_old"),
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/6", 1, "new_reads_old")}
    assert all("`qty`" in r["message"] or "`sku2`" in r["message"] for r in reasons)
    # 2 -> 3: qty became NOT NULL (and lost its null default), sku2 was added
    changes = http.get(f"/v1/subjects/{VALUE}/diff?from=2&to=3").json()["changes"]
    assert [(c["change"], c["column"], c["before"], c["after"]) for c in changes[:2]] == [
        ("nullability_changed", "qty", True, False),
        ("default_changed", "qty", {"default": None}, None)]


def test_a_version_against_itself_has_no_changes(http: httpx.Client,
                                                 two_versions: Any) -> None:
    same = http.get(f"/v1/subjects/{VALUE}/diff", params={"from": 2, "to": "latest"}).json()
    assert (same["changes"], same["compatibility"]["compatible"]) == ([], True)
    assert same["from"] == same["to"]


def test_a_backwards_diff_checks_the_older_schema_against_the_newer(
        http: httpx.Client, two_versions: Any) -> None:
    http.put(f"/v1/subjects/{VALUE}/compatibility", json={"compatibility": "FORWARD"})
    back = http.get(f"/v1/subjects/{VALUE}/diff", params={"from": 2, "to": 1}).json()
    assert [(c["change"], c["column"]) for c in back["changes"]] == [("removed", "qty")]
    assert back["compatibility"]["compatible"] is True  # v2 reads v1's data: qty defaults


@pytest.mark.parametrize(("query", "status", "code", "location"), [
    ({"from": 1, "to": 7}, 404, "version_not_found", None),
    ({"from": 0, "to": 1}, 422, "invalid_request", "query/from"),
    ({"from": 1, "to": "newest"}, 422, "invalid_request", "query/to"),
    ({"from": 1}, 422, "invalid_request", "query/to"),
    ({"from": 2147483648, "to": 1}, 422, "invalid_version", None),
])
def test_bad_diff_versions(http: httpx.Client, two_versions: Any, query: dict[str, Any],
                           status: int, code: str, location: str | None) -> None:
    body = problem(http.get(f"/v1/subjects/{VALUE}/diff", params=query), status, code)
    if location:
        assert body["errors"][0]["location"] == location


def test_a_diff_of_a_soft_deleted_version_is_404_naming_it(http: httpx.Client,
                                                           two_versions: Any) -> None:
    assert http.delete(f"/v1/subjects/{VALUE}/versions/1").status_code == 200
    body = problem(http.get(f"/v1/subjects/{VALUE}/diff?from=1&to=2"), 404,
                   "version_soft_deleted")
    assert (body["subject"], body["version"], body["field"]) == (VALUE, 1, "from")
    problem(http.get("/v1/subjects/nope-value/diff?from=1&to=2"), 404, "subject_not_found")


def test_a_schema_by_id_lists_the_versions_using_it(http: httpx.Client) -> None:
    first = register(http)
    other = register(http, ORDERS_DDL, topic="orders_copy")
    assert other["value"]["id"] == first["value"]["id"]  # the same schema, one id
    schema_id = first["value"]["id"]
    found = http.get(f"/v1/schemas/{schema_id}").json()
    text = http.get(f"/registry/schemas/ids/{schema_id}").json()["schema"]
    assert found == {"id": schema_id, "schema": json.loads(text), "schema_text": text,
                     "versions": [{"subject": "orders_copy-value", "version": 1},
                                  {"subject": VALUE, "version": 1}]}
    assert http.delete("/v1/subjects/orders_copy-value").status_code == 200
    assert [v["subject"] for v in http.get(f"/v1/schemas/{schema_id}").json()["versions"]] \
        == [VALUE]
    assert len(http.get(f"/v1/schemas/{schema_id}?deleted=true").json()["versions"]) == 2


@pytest.mark.parametrize(("path", "status", "code"), [
    ("/v1/schemas/999", 404, "schema_not_found"),
    ("/v1/schemas/0", 422, "invalid_request"),
    ("/v1/schemas/abc", 404, "not_found"),  # no route: GET /v1/schemas/generate stays 405
    ("/v1/schemas/generate", 405, "method_not_allowed"),
])
def test_bad_schema_ids(http: httpx.Client, path: str, status: int, code: str) -> None:
    problem(http.get(path), status, code)


def test_deleting_a_topic_soft_deletes_then_hard_deletes_both_subjects(
        http: httpx.Client) -> None:
    register(http)
    assert http.delete(f"/v1/topics/{TOPIC}").json() == {
        "topic": TOPIC, "permanent": False, "subjects": [
            {"subject": KEY_SUBJECT, "versions": [1], "permanent": False},
            {"subject": VALUE, "versions": [1], "permanent": False}]}
    assert http.get("/v1/subjects").json() == []
    problem(http.get(f"/v1/topics/{TOPIC}/schemas"), 404, "subject_not_found")
    problem(http.delete(f"/v1/topics/{TOPIC}"), 404, "subject_soft_deleted")
    assert http.delete(f"/v1/topics/{TOPIC}", params={"permanent": True}).json() == {
        "topic": TOPIC, "permanent": True, "subjects": [
            {"subject": KEY_SUBJECT, "versions": [1], "permanent": True},
            {"subject": VALUE, "versions": [1], "permanent": True}]}
    assert http.get("/v1/subjects", params={"deleted": True}).json() == []
    body = problem(http.delete(f"/v1/topics/{TOPIC}"), 404, "subject_not_found")
    assert body["topic"] == TOPIC and KEY_SUBJECT in body["detail"] and VALUE in body["detail"]


def test_a_permanent_topic_delete_before_a_soft_one_deletes_nothing(
        http: httpx.Client) -> None:
    register(http)
    assert http.delete(f"/v1/subjects/{VALUE}").status_code == 200  # the key stays live
    body = problem(http.delete(f"/v1/topics/{TOPIC}?permanent=true"), 404,
                   "subject_not_soft_deleted")
    assert body["subject"] == KEY_SUBJECT
    assert http.get("/v1/subjects", params={"deleted": True}).json() == [KEY_SUBJECT, VALUE]
    # a soft delete now takes the one subject still live
    assert [s["subject"] for s in http.delete(f"/v1/topics/{TOPIC}").json()["subjects"]] == [
        KEY_SUBJECT]


def test_a_keyless_topic_has_only_its_value_subject_deleted(http: httpx.Client) -> None:
    register(http, "CREATE TABLE shop.logs (line TEXT)")
    deleted = http.delete("/v1/topics/tidb_shop_logs").json()
    assert [s["subject"] for s in deleted["subjects"]] == ["tidb_shop_logs-value"]
