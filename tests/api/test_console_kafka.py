"""The console's messages page against a real broker: the last messages of a topic over its
partitions, decoded, each linked to its subject version; an unknown topic is a 404 page."""

from __future__ import annotations

import json
import uuid
from base64 import b64decode
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.parts import Broker


def test_the_last_messages_of_a_topic_decode_newest_last(
        kafka: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLATAVRO_KAFKA_BOOTSTRAP_SERVERS", kafka.bootstrap)
    topic = f"tidb_shop_items_{uuid.uuid4().hex[:8]}"
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING")
    with TestClient(create_app(settings)) as client:
        client.post("/v1/tables/register", json={
            "ddl": "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))",
            "topic": topic}).raise_for_status()
        records = [{"op": "insert", "row": {"id": n, "name": f"n{n}"}} for n in range(6)]
        records.append({"op": "delete", "row": {"id": 5}})
        encoded = client.post(f"/v1/topics/{topic}/encode",
                              json={"records": records}).json()["messages"]
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        for n, message in enumerate(encoded):  # spread over the partitions, in order in time
            producer.produce(topic, key=b64decode(message["key"]), partition=n % 3,
                             value=b64decode(message["value"]) if message["value"] else None,
                             timestamp=1_700_000_000_000 + n)
        assert producer.flush(30) == 0
        page = client.get(f"/console/messages?topic={topic}&count=3")
        assert page.status_code == 200, page.text
        html = BeautifulSoup(page.text, "html.parser")
        rows = [[c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])]
                for tr in html.select("table.fields tbody tr")]
        assert [json.loads(r[2]) for r in rows] == [{"id": 4}, {"id": 5}, {"id": 5}]
        assert [r[1] for r in rows] == ["upsert", "upsert", "delete (tombstone)"]
        assert [r[0] for r in rows] == ["partition 1, offset 1", "partition 2, offset 1",
                                        "partition 0, offset 2"]
        assert rows[1][5].endswith(f"{topic}-value v1")
        missing = client.get("/console/messages?topic=no_such_topic_here")
        assert missing.status_code == 404
        assert "topic_not_found" in BeautifulSoup(missing.text, "html.parser").select_one(
            ".problem").get_text()
