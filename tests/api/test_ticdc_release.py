"""The TiCDC release line to target (`options.ticdc_release`, ``--ticdc-release``): its
schemas are each release's own (tests/core/test_ticdc_releases.py against the encoders);
here, that the option reaches them over HTTP and on the command line."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from tests.cli.test_schema_cmd import run

DDL = "CREATE TABLE shop.nulls (id INT PRIMARY KEY, c VARCHAR(8) NULL DEFAULT 'null')"


def test_the_option_over_http_and_on_the_command_line(client: TestClient,
                                                       tmp_path: Path) -> None:
    newest = client.post("/v1/schemas/generate", json={"ddl": DDL})
    targeted = client.post("/v1/schemas/generate", json={
        "ddl": DDL, "options": {"ticdc_release": "tiflow-v8.5.2"}})
    assert newest.status_code == targeted.status_code == 200, targeted.text
    c = {r: next(f for f in body.json()["value_schema"]["fields"] if f["name"] == "c")
         for r, body in (("newest", newest), ("tiflow-v8.5.2", targeted))}
    assert c["newest"]["type"][1] == "null" and c["tiflow-v8.5.2"]["type"][0] == "null"
    assert c["newest"]["default"] == c["tiflow-v8.5.2"]["default"] == "null"
    refused = client.post("/v1/schemas/generate", json={
        "ddl": DDL, "options": {"ticdc_release": "tiflow-v8.3"}})
    assert refused.status_code == 422 and "pingcap/tiflow#11994" in refused.json()["message"]
    (tmp_path / "t.sql").write_text(DDL)
    printed = run("schema", "generate", "--ddl", str(tmp_path / "t.sql"), "--ticdc-release",
                  "tiflow-v8.5.2")
    assert printed.returncode == 0, printed.stderr
    out = json.loads(printed.stdout)
    assert out["value_schema"] == targeted.json()["value_schema"]
