"""The service with FLATAVRO_REGISTRY_URL at each external registry: register, re-register,
evolve, refuse with the column, dry run, naming rules, encode/decode, convert with register,
the subject view and readiness — the same answers whatever registry stands behind it."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from fastapi.testclient import TestClient

from tests.support.parts import FLATAVRO, ExternalRegistry
from tests.support.registries import Names


def register(service: TestClient, ddl: str, **extra: Any) -> Any:
    return service.post("/v1/tables/register", json={"ddl": ddl, **extra})


def versions(registry: ExternalRegistry, subject: str) -> list[int]:
    with registry.http() as http:
        return list(http.get(f"subjects/{subject}/versions").json())


def set_level(registry: ExternalRegistry, subject: str, level: str) -> None:
    with registry.http() as http:
        done = http.put(f"config/{subject}", json={"compatibility": level})
        assert done.status_code == 200, done.text


def test_register_reregister_and_evolve(service: TestClient, names: Names,
                                        registry: ExternalRegistry) -> None:
    first = register(service, names.ddl())
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["topic"] == names.topic
    assert body["key"]["subject"] == names.key_subject and body["key"]["version"] == 1
    assert body["value"]["subject"] == names.value_subject and body["value"]["version"] == 1
    again = register(service, names.ddl())
    assert again.status_code == 200 and again.json() == body  # idempotent: same ids
    evolved = register(service, names.ddl(", qty INT"))
    assert evolved.status_code == 200, evolved.text
    assert evolved.json()["key"] == body["key"]
    assert evolved.json()["value"]["version"] == 2
    assert evolved.json()["value"]["id"] != body["value"]["id"]
    assert versions(registry, names.value_subject) == [1, 2]
    assert versions(registry, names.key_subject) == [1]
    with registry.http() as http:  # what the registry holds is what flatavro generated
        stored = http.get(f"schemas/ids/{evolved.json()['value']['id']}").json()["schema"]
    generated = service.post("/v1/schemas/generate", json={"ddl": names.ddl(", qty INT")})
    assert json.loads(stored) == generated.json()["value_schema"]


def test_an_incompatible_change_is_refused_naming_the_column(
        service: TestClient, names: Names, registry: ExternalRegistry) -> None:
    assert register(service, names.ddl()).status_code == 200
    set_level(registry, names.value_subject, "BACKWARD")
    ddl = names.ddl(", qty INT NOT NULL")
    check = service.post("/v1/tables/check", json={"ddl": ddl})
    assert check.status_code == 200, check.text
    verdict = check.json()
    assert verdict["compatible"] is False
    value = next(s for s in verdict["subjects"] if s["subject"] == names.value_subject)
    assert value["compatibility_level"] == "BACKWARD"
    assert [(i["type"], i["location"]) for i in value["incompatibilities"]] == \
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/4")]
    assert "column `qty`" in value["incompatibilities"][0]["message"]
    refused = register(service, ddl)
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "incompatible_schema"
    assert "column `qty` is new and has no default" in refused.json()["detail"]
    assert versions(registry, names.value_subject) == [1]  # nothing registered
    assert versions(registry, names.key_subject) == [1]


def test_the_dry_run_registers_nothing(service: TestClient, names: Names,
                                       registry: ExternalRegistry) -> None:
    check = service.post("/v1/tables/check", json={"ddl": names.ddl()})
    assert check.status_code == 200, check.text
    assert check.json()["compatible"] is True
    assert [s["subject"] for s in check.json()["subjects"]] == \
        [names.key_subject, names.value_subject]
    with registry.http() as http:
        subjects = http.get("subjects").json()
    assert names.key_subject not in subjects and names.value_subject not in subjects


def test_naming_rules_one_table_per_topic(service: TestClient, names: Names,
                                          registry: ExternalRegistry) -> None:
    assert register(service, names.ddl()).status_code == 200
    other = f"CREATE TABLE {names.schema}.other (id INT PRIMARY KEY)"
    bound = register(service, other, topic=names.topic)
    assert bound.status_code == 409, bound.text
    assert bound.json()["code"] == "topic_bound_to_other_table"
    bad = register(service, other, topic="no spaces allowed")
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_topic_rule"
    assert versions(registry, names.key_subject) == [1]


def test_encode_and_decode(service: TestClient, names: Names) -> None:
    registered = register(service, names.ddl()).json()
    encoded = service.post(f"/v1/topics/{names.topic}/encode", json={"records": [
        {"op": "insert", "row": {"id": 1, "sku": "A-1", "price": "9.90",
                                 "created": "2024-03-11 08:51:01.461"}},
        {"op": "delete", "row": {"id": 1}}]})
    assert encoded.status_code == 200, encoded.text
    messages = encoded.json()["messages"]
    assert encoded.json()["key_schema_id"] == registered["key"]["id"]
    assert encoded.json()["value_schema_id"] == registered["value"]["id"]
    decoded = service.post("/v1/decode", json={"messages": [
        {"key": m["key"], "value": m["value"]} for m in messages]})
    assert decoded.status_code == 200, decoded.text
    rows = decoded.json()["messages"]
    assert rows[0]["value"] == {"id": 1, "sku": "A-1", "price": "9.90",
                                "created": "2024-03-11 08:51:01.461"}
    assert rows[0]["op"] == "upsert" and rows[1]["op"] == "delete"
    assert rows[1]["key"] == {"id": 1} and rows[1]["value"] is None


def canal_insert(database: str, row_id: int) -> str:
    return json.dumps({
        "id": 0, "database": database, "table": "tp_int", "pkNames": ["id"], "isDdl": False,
        "type": "INSERT", "es": 1639633141221, "ts": 1639633142960, "sql": "",
        "sqlType": {"id": 4, "c_int": 4}, "mysqlType": {"id": "int", "c_int": "int"},
        "data": [{"id": str(row_id), "c_int": "2147483647"}], "old": None,
        "_tidb": {"commitTs": 429918007904436226}})


def test_convert_registers_on_first_use(service: TestClient, names: Names,
                                        registry: ExternalRegistry) -> None:
    converted = service.post("/v1/convert/canal-json", json={
        "register": True, "messages": [{"value": canal_insert(names.schema, 2)}]})
    assert converted.status_code == 200, converted.text
    message = converted.json()["messages"][0]
    assert message["topic"] == f"tidb_{names.schema}_tp_int"
    assert versions(registry, f"tidb_{names.schema}_tp_int-value") == [1]
    decoded = service.post("/v1/decode", json={"messages": [
        {"key": message["key"], "value": message["value"]}]})
    assert decoded.json()["messages"][0]["value"] == {"id": 2, "c_int": 2147483647}


def test_cli_convert_registers(names: Names, registry: ExternalRegistry, tmp_path: Any) -> None:
    source = tmp_path / "canal.ndjson"
    source.write_text(json.dumps({"key": None, "value": canal_insert(names.schema, 3)}) + "\n")
    done = subprocess.run([str(FLATAVRO), "convert", str(source), "--protocol", "canal-json",
                           "--register", "--registry-url", registry.url],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [m["topic"] for m in out] == [f"tidb_{names.schema}_tp_int"]
    assert versions(registry, f"tidb_{names.schema}_tp_int-key") == [1]
    assert versions(registry, f"tidb_{names.schema}_tp_int-value") == [1]


def test_the_subject_view_and_readiness(service: TestClient, names: Names) -> None:
    assert register(service, names.ddl()).status_code == 200
    view = service.get(f"/v1/subjects/{names.value_subject}")
    assert view.status_code == 200, view.text
    assert view.json()["versions"] == [1]
    assert view.json()["mode"]["effective"] == "READWRITE"
    ready = service.get("/readyz")
    assert ready.status_code == 200, ready.text


def test_backward_compares_the_latest_version_and_transitive_every_one(
        service: TestClient, names: Names, registry: ExternalRegistry) -> None:
    """v1 has `qty` INT, v2 drops it, v3 brings it back as text: BACKWARD takes v3 (it reads
    v2's data), BACKWARD_TRANSITIVE does not (v1 wrote `qty` as an int). Apicurio 2.6's own
    check without a version compares every version whatever the level, so flatavro asks it
    about the latest version unless the level is transitive."""
    assert register(service, names.ddl(", qty INT")).status_code == 200
    set_level(registry, names.value_subject, "BACKWARD")
    assert register(service, names.ddl()).status_code == 200
    again = names.ddl(", qty VARCHAR(10)")
    set_level(registry, names.value_subject, "BACKWARD_TRANSITIVE")
    refused = register(service, again)
    assert refused.status_code == 409, refused.text
    assert "column `qty`" in refused.json()["detail"]
    assert refused.json()["subjects"][0]["incompatibilities"][0]["version"] == 1
    set_level(registry, names.value_subject, "BACKWARD")
    taken = register(service, again)
    assert taken.status_code == 200, taken.text
    assert versions(registry, names.value_subject) == [1, 2, 3]
