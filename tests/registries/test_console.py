"""The console against each external registry (another flatavro, Apicurio Registry 2.6): the
same pages and forms as against the embedded one, the registry's own answers behind them."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from tests.support.registries import Names


def _page(client: TestClient, url: str, status: int = 200) -> BeautifulSoup:
    answer = client.get(url)
    assert answer.status_code == status, answer.text[:1500]
    return BeautifulSoup(answer.text, "html.parser")


def _rows(page: BeautifulSoup, caption: str) -> list[list[str]]:
    for table in page.find_all("table"):
        if table.caption and table.caption.get_text(" ", strip=True).startswith(caption):
            return [[c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])]
                    for tr in table.select("tbody tr")]
    raise AssertionError(f"no table captioned {caption!r}")


def test_the_console_reads_and_changes_an_external_registry(service: TestClient,
                                                            names: Names) -> None:
    for columns in ("", ", note TEXT"):
        registered = service.post("/v1/tables/register", json={"ddl": names.ddl(columns)})
        assert registered.status_code == 200, registered.text
    listed = _page(service, f"/console/?q={names.topic}")
    assert [r[:3] for r in _rows(listed, "1 of")] == [
        [names.topic, names.key_subject, names.value_subject]]
    table = _page(service, f"/console/tables/{names.topic}")
    fields = {r[0]: r for r in _rows(table, "Version 2 (schema id")}
    assert fields["price"][1:3] == ["DECIMAL", "bytes (decimal)"]
    assert fields["price"][-1] == "DECIMAL(12,2)" and fields["note"][3] == "yes"
    diff = _page(service, f"/console/subjects/{names.value_subject}/diff?from=1&to=2")
    assert [r[:2] + [r[3]] for r in _rows(diff, "Column changes")] == [
        ["note", "+ added", "✓ compatible"]]
    value_id = service.get(f"/v1/subjects/{names.value_subject}").json()["latest"]["id"]
    jumped = _page(service, f"/console/?q={value_id}")
    assert [names.value_subject, "2"] in _rows(jumped, f"Subject versions that use schema "
                                                        f"{value_id}")
    service.get("/console/")
    csrf = service.cookies.get("flatavro_csrf")
    for level in ("BACKWARD", "FULL"):  # Apicurio has no global level unless one is set
        saved = service.post("/console/settings/compatibility", follow_redirects=False, data={
            "csrf": csrf, "subject": names.value_subject, "level": level})
        assert saved.status_code == 303
        assert service.get(f"/v1/subjects/{names.value_subject}/compatibility"
                           ).json()["configured"] == level
        ddl = names.ddl(", note TEXT, must INT NOT NULL")
        red = BeautifulSoup(service.get("/console/ddl", params={
            "ddl": ddl, "topic": "tidb_{schema}_{table}"}).text, "html.parser")
        assert red.select_one(".verdict").get_text(strip=True).startswith("✗"), level
        assert red.select_one("form[action='/console/ddl/register'] button").has_attr(
            "disabled")
    deleted = service.post(f"/console/subjects/{names.key_subject}/delete",
                           follow_redirects=False,
                           data={"csrf": csrf, "confirm": names.key_subject})
    assert deleted.status_code == 303, deleted.text
    assert names.key_subject not in service.get("/v1/subjects").json()
    again = _page(service, f"/console/?q={names.topic}")
    assert [r[1:4] for r in _rows(again, "1 of")] == [["—", names.value_subject,
                                                        "missing its key subject"]]
