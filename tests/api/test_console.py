"""The console at ``/console`` through the ASGI client: every page parsed as HTML (tables,
forms, links), every form against the registry behind it, and the hostile cases: script in
names, docs and DDL; forms without the CSRF token; a read-only caller trying every write."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from httpx import Response

from tests.support.api import KEY, ClientFactory

TOPIC = "tidb_{schema}_{table}"
ORDERS = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku VARCHAR(64) NOT NULL, "
          "price DECIMAL(12,2) NOT NULL, state ENUM('new','paid','sent') DEFAULT 'new', "
          "note TEXT)")
ORDERS_V2 = ORDERS.replace("note TEXT)", "note TEXT, qty INT)")
VALUE, KEY_SUBJECT = "tidb_shop_orders-value", "tidb_shop_orders-key"
LOGS = "CREATE TABLE shop.logs (line TEXT)"  # no handle key: TiCDC sends no key schema


def _register(client: TestClient, ddl: str) -> dict[str, Any]:
    answer = client.post("/v1/tables/register", json={"ddl": ddl, "topic": TOPIC})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _html(response: Response, status: int = 200) -> BeautifulSoup:
    assert response.status_code == status, response.text[:2000]
    assert response.headers["content-type"].startswith("text/html")
    return BeautifulSoup(response.text, "html.parser")


def _table(page: BeautifulSoup, caption: str) -> list[dict[str, str]]:
    """The rows of the table whose caption starts with `caption`, as header -> cell text."""
    for table in page.find_all("table"):
        if table.caption and table.caption.get_text(" ", strip=True).startswith(caption):
            heads = [th.get_text(" ", strip=True) for th in table.select("thead th")]
            rows = []
            for tr in table.select("tbody tr"):
                cells = [c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])]
                rows.append(dict(zip(heads, cells, strict=False)) if heads else
                            {cells[0]: " ".join(cells[1:])})
            return rows
    captions = [t.caption.get_text(strip=True) for t in page.find_all("table") if t.caption]
    raise AssertionError(f"no table captioned {caption!r}: {captions}")


def _csrf(client: TestClient) -> str:
    client.get("/console/")
    token = client.cookies.get("flatavro_csrf")
    assert token
    return token


def _problem(page: BeautifulSoup) -> str:
    alert = page.select_one(".problem")
    assert alert is not None, page.get_text(" ", strip=True)[:500]
    return alert.get_text(" ", strip=True)


@pytest.fixture
def console(client: TestClient) -> TestClient:
    """Two versions of shop.orders, a keyless shop.logs, and a subject outside the rule."""
    _register(client, ORDERS)
    _register(client, ORDERS_V2)
    _register(client, LOGS)
    stray = {"type": "record", "name": "Stray", "fields": [{"name": "a", "type": "int"}]}
    assert client.post("/registry/subjects/not.a.tidb.subject/versions",
                       json={"schema": json.dumps(stray)}).status_code == 200
    return client


def test_the_list_groups_subjects_as_tables_and_flags_what_is_odd(console: TestClient) -> None:
    page = _html(console.get("/console/"))
    rows = _table(page, "3 of 4 subject(s)")
    assert [r["Table (topic) or subject"] for r in rows] == [
        "not.a.tidb.subject", "tidb_shop_logs", "tidb_shop_orders"]
    by_name = {r["Table (topic) or subject"]: r for r in rows}
    assert by_name["tidb_shop_orders"]["Key subject"] == KEY_SUBJECT
    assert by_name["tidb_shop_orders"]["Notes"] == ""
    assert by_name["tidb_shop_logs"]["Notes"] == "missing its key subject"
    assert "outside the naming rule" in by_name["not.a.tidb.subject"]["Notes"]
    links = {a.get_text(strip=True): a["href"] for a in page.select("table.list a")}
    assert links["tidb_shop_orders"] == "/console/tables/tidb_shop_orders"
    assert links["not.a.tidb.subject"] == "/console/subjects/not.a.tidb.subject"
    assert page.select_one("label[for=q]") is not None  # every input labelled
    for control in page.select("input:not([type=hidden]), select, textarea"):
        assert page.select_one(f"label[for={control['id']}]") is not None, control


@pytest.mark.parametrize(("query", "found"), [
    ("q=ORDERS", ["tidb_shop_orders"]),
    ("q=/^tidb_shop_(logs|nothing)/", ["tidb_shop_logs"]),
    ("q=field:SKU", ["tidb_shop_orders"]),
    ("q=column:line", ["tidb_shop_logs"]),
    ("missing=true", ["tidb_shop_logs"]),
    ("broken=true", ["not.a.tidb.subject"]),
    ("kind=key", ["tidb_shop_orders"]),
    ("level=backward", ["not.a.tidb.subject", "tidb_shop_logs", "tidb_shop_orders"]),
    ("level=FULL", []),
    ("mode=READWRITE&q=logs", ["tidb_shop_logs"]),
])
def test_search_and_filters(console: TestClient, query: str, found: list[str]) -> None:
    page = _html(console.get(f"/console/?{query}"))
    rows = [r for r in _table(page, f"{len(found)} of 4") if "Nothing found." not in r.values()]
    assert [r["Table (topic) or subject"] for r in rows] == found


def test_a_schema_id_jumps_to_its_schema_and_every_version_using_it(console: TestClient
                                                                    ) -> None:
    key_id = console.get(f"/v1/subjects/{KEY_SUBJECT}").json()["latest"]["id"]
    jump = console.get(f"/console/?q=id:{key_id}", follow_redirects=False)
    assert (jump.status_code, jump.headers["location"]) == (303, f"/console/schemas/{key_id}")
    page = _html(console.get(jump.headers["location"]))
    assert _table(page, f"Subject versions that use schema {key_id}") == [
        {"Subject": KEY_SUBJECT, "Version": "1"}]
    assert json.loads(page.select_one("pre.schema").get_text())["name"] == "orders"
    assert _problem(_html(console.get("/console/schemas/999"), 404)).startswith(
        "schema_not_found")


def test_bad_searches_name_the_field(console: TestClient) -> None:
    assert "q: the regular expression /(/ does not compile" in _problem(
        _html(console.get("/console/?q=/(/"), 422))
    assert "level: 'LOOSE' is not one of" in _problem(
        _html(console.get("/console/?level=LOOSE"), 422))
    assert "page 9 is past the last page" in _problem(
        _html(console.get("/console/?page=9"), 422))


def test_pages_are_served_in_pages(client: TestClient) -> None:
    for n in range(26):
        _register(client, f"CREATE TABLE p.t{n:02} (id INT PRIMARY KEY)")
    first = _html(client.get("/console/?size=25"))
    assert len(_table(first, "26 of 52")) == 25
    after = first.select_one("a[rel=next]")
    assert after is not None and "page=2" in after["href"] and "size=25" in after["href"]
    second = _html(client.get(after["href"]))
    assert [r["Table (topic) or subject"] for r in _table(second, "26 of 52")] == ["tidb_p_t25"]


def test_a_table_page_maps_every_column_to_its_field(console: TestClient) -> None:
    page = _html(console.get("/console/tables/tidb_shop_orders"))
    sides = [h.get_text(strip=True) for h in page.select("section.side h2")]
    assert sides == [f"Key subject: {KEY_SUBJECT}", f"Value subject: {VALUE}"]
    facts = {k: v for row in _table(page, f"{VALUE} at a glance") for k, v in row.items()}
    value_id = console.get(f"/v1/subjects/{VALUE}").json()["latest"]["id"]
    assert facts["Live versions"] == "1, 2"
    assert facts["Latest"] == f"version 2, schema id {value_id}"
    assert facts["Compatibility"] == "BACKWARD (the global level)"
    assert facts["Mode"] == "READWRITE (the global mode)"
    assert facts["A Spark job starting now"].startswith(f"reads with schema id {value_id}")
    fields = {r["Field (column)"]: r for r in _table(page, f"Version 2 (schema id {value_id})")}
    assert list(fields) == ["id", "sku", "price", "state", "note", "qty"]
    assert fields["price"] == {
        "Field (column)": "price", "TiDB type": "DECIMAL", "Avro type": "bytes (decimal)",
        "Nullable": "NOT NULL", "Default": "none", "Precision, scale": "12, 2",
        "ENUM/SET members": "—", "Spark SQL type": "DECIMAL(12,2)"}
    assert fields["state"]["ENUM/SET members"] == "new, paid, sent"
    assert fields["state"]["Default"] == '"new"'
    assert fields["qty"]["Nullable"] == "yes" and fields["qty"]["Spark SQL type"] == "INT"
    assert fields["id"]["Spark SQL type"] == "BIGINT"
    older = _html(console.get("/console/tables/tidb_shop_orders?value=1"))
    assert "qty" not in {r["Field (column)"] for r in _table(older, "Version 1 (schema id")}
    download = console.get(page.select_one("a[download]")["href"])
    assert download.headers["content-disposition"].startswith("attachment;")
    assert download.text == console.get(f"/registry/subjects/{KEY_SUBJECT}/versions/1"
                                        ).json()["schema"]


def test_a_keyless_table_and_a_subject_outside_the_rule(console: TestClient) -> None:
    logs = _html(console.get("/console/tables/tidb_shop_logs"))
    assert "has no subject tidb_shop_logs-key" in logs.select("section.side")[0].get_text()
    lone = _html(console.get("/console/subjects/not.a.tidb.subject"))
    assert [h.get_text(strip=True) for h in lone.select("section.side h2")] == [
        "Subject: not.a.tidb.subject"]
    redirected = console.get(f"/console/subjects/{VALUE}?version=1", follow_redirects=False)
    assert redirected.headers["location"] == "/console/tables/tidb_shop_orders?value=1"
    assert _problem(_html(console.get("/console/tables/nope"), 404)).startswith(
        "subject_not_found")


def test_the_diff_gives_a_verdict_per_column_then_the_text(console: TestClient) -> None:
    csrf = _csrf(console)
    # A NOT NULL column without default breaks BACKWARD: registered under NONE, then back.
    console.put(f"/v1/subjects/{VALUE}/compatibility", json={"compatibility": "NONE"})
    _register(console, ORDERS_V2.replace("qty INT)", "qty INT, must INT NOT NULL)"))
    console.delete(f"/v1/subjects/{VALUE}/compatibility")
    page = _html(console.get(f"/console/subjects/{VALUE}/diff?from=2&to=3"))
    verdict = page.select_one(".verdict").get_text(" ", strip=True)
    assert verdict == "Version 3 may NOT follow version 2 at BACKWARD (incompatible)."
    rows = _table(page, "Column changes from version 2")
    assert [(r["Column"], r["Change"]) for r in rows] == [("must", "+ added")]
    assert rows[0]["Verdict at BACKWARD"].startswith("✗ breaks")
    assert "must" in rows[0]["Verdict at BACKWARD"]
    ok = _table(_html(console.get(f"/console/subjects/{VALUE}/diff?from=1&to=2")),
                "Column changes from version 1")
    assert [(r["Column"], r["Verdict at BACKWARD"]) for r in ok] == [("qty", "✓ compatible")]
    text = page.select_one("pre.diff")
    assert any('"name": "must"' in ins.get_text() for ins in text.find_all("ins"))
    assert csrf  # the diff is a GET: no token needed
    missing = _html(console.get(f"/console/subjects/{VALUE}/diff?from=1&to=9"), 404)
    assert "version" in _problem(missing)


def test_the_ddl_preview_says_what_each_column_does_and_registers_only_when_green(
        console: TestClient) -> None:
    script = ORDERS_V2 + ";\nALTER TABLE shop.orders ADD COLUMN `a-b` VARCHAR(8)"
    page = _html(console.get("/console/ddl", params={"ddl": script, "topic": TOPIC}))
    assert page.select_one(".verdict").get_text(strip=True).startswith("✓")
    columns = {r["Column"]: r for r in _table(page, "Columns of `shop`.`orders`")}
    assert columns["a-b"]["Avro field"] == "a_b (sanitized)"
    assert columns["id"]["In the key"] == "yes"
    assert columns["price"]["TiDB type"] == "decimal(12,2) NOT NULL"
    assert [li.get_text(" ", strip=True).split(" ")[0] for li in
            page.select("ol.statements li")] == ["created", "altered"]
    register = page.select_one("form[action='/console/ddl/register'] button")
    assert register is not None and not register.has_attr("disabled")
    broken = ORDERS_V2 + "; ALTER TABLE shop.orders ADD COLUMN must INT NOT NULL"
    red = _html(console.get("/console/ddl", params={"ddl": broken, "topic": TOPIC}))
    assert red.select_one(".verdict").get_text(strip=True).startswith("✗")
    assert _table(red, "Columns of")[-1]["Verdict"].startswith("✗ breaks")
    must = {r["Column"]: r for r in _table(red, f"Changes to {VALUE} against its version 2")}
    assert must["must"]["Verdict"].startswith("✗ breaks") and "must" in must["must"]["Verdict"]
    assert red.select_one("form[action='/console/ddl/register'] button").has_attr("disabled")
    extension = _html(console.get("/console/ddl", params={
        "ddl": ORDERS, "topic": TOPIC, "tidb_extension": "true", "decimal": "string"}))
    values = {r["Field"]: r for r in _table(extension, "The value schema's fields")}
    assert {"_tidb_op", "_tidb_commit_ts"} <= set(values)
    assert values["price"]["Avro type"] == "string"
    # Register: the form posts the previewed script back.
    form = page.select_one("form[action='/console/ddl/register']")
    data = {i["name"]: i["value"] for i in form.select("input[type=hidden]")}
    done = console.post("/console/ddl/register", data=data, follow_redirects=False)
    assert (done.status_code, done.headers["location"]) == (
        303, "/console/tables/tidb_shop_orders?done=registered")
    assert console.get(f"/v1/subjects/{VALUE}/versions").json() == [1, 2, 3]
    refused = console.post("/console/ddl/register", data={**data, "ddl": broken},
                           follow_redirects=False)
    assert _problem(_html(refused, 409)).startswith("incompatible_schema")
    unparsed = _html(console.get("/console/ddl", params={"ddl": "CREATE TABLE (", "topic": TOPIC}),
                     422)
    assert unparsed.select_one("textarea#ddl").get_text() == "CREATE TABLE ("


def test_levels_modes_and_deletes_through_forms(console: TestClient) -> None:
    csrf = _csrf(console)
    back = "/console/tables/tidb_shop_orders"
    saved = console.post("/console/settings/compatibility", follow_redirects=False, data={
        "csrf": csrf, "subject": VALUE, "level": "FULL_TRANSITIVE", "back": back})
    assert saved.headers["location"] == back + "?done=compatibility"
    assert console.get(f"/v1/subjects/{VALUE}/compatibility").json()["configured"] == \
        "FULL_TRANSITIVE"
    page = _html(console.get(saved.headers["location"]))
    assert page.select_one(".done").get_text(strip=True) == "Compatibility level saved."
    facts = {k: v for row in _table(page, f"{VALUE} at a glance") for k, v in row.items()}
    assert facts["Compatibility"] == "FULL_TRANSITIVE (set on the subject)"
    console.post("/console/settings/compatibility", data={
        "csrf": csrf, "subject": VALUE, "level": "inherit", "back": back})
    assert console.get(f"/v1/subjects/{VALUE}/compatibility").json()["configured"] is None
    console.post("/console/settings/mode", data={"csrf": csrf, "mode": "READONLY"})
    assert console.get("/v1/mode").json()["mode"] == "READONLY"
    console.post("/console/settings/mode", data={"csrf": csrf, "mode": "READWRITE"})
    off = console.post("/console/settings/compatibility", follow_redirects=False, data={
        "csrf": csrf, "level": "NONE", "back": "https://elsewhere.example/"})
    assert off.headers["location"] == "/console/settings?done=compatibility"  # stays home
    wrong = console.post(f"/console/subjects/{KEY_SUBJECT}/delete",
                         data={"csrf": csrf, "confirm": "tidb_shop_orders"})
    assert "type the subject's name" in _problem(_html(wrong, 422))
    assert KEY_SUBJECT in console.get("/v1/subjects").json()
    soft = console.post(f"/console/subjects/{KEY_SUBJECT}/delete", follow_redirects=False,
                        data={"csrf": csrf, "confirm": KEY_SUBJECT})
    assert soft.headers["location"] == "/console/tables/tidb_shop_orders?done=soft-deleted"
    assert KEY_SUBJECT not in console.get("/v1/subjects").json()
    listed = {r["Table (topic) or subject"]: r for r in _table(_html(console.get("/console/")),
                                                                "3 of 3")}
    assert listed["tidb_shop_orders"]["Notes"] == "missing its key subject"  # not the old list
    after = _html(console.get("/console/tables/tidb_shop_orders"))
    hard = after.select_one(f"form[action='/console/subjects/{KEY_SUBJECT}/delete']")
    assert hard.select_one("input[name=permanent]")["value"] == "true"
    console.post(f"/console/subjects/{KEY_SUBJECT}/delete",
                 data={"csrf": csrf, "confirm": KEY_SUBJECT, "permanent": "true"})
    assert KEY_SUBJECT not in console.get("/v1/subjects?deleted=true").json()


WRITES = [("/console/settings/compatibility", {"level": "NONE"}),
          ("/console/settings/mode", {"mode": "READONLY"}),
          (f"/console/subjects/{VALUE}/delete", {"confirm": VALUE}),
          ("/console/ddl/register", {"ddl": ORDERS_V2, "topic": TOPIC})]


@pytest.mark.parametrize(("path", "data"), WRITES)
def test_forms_without_the_csrf_token_change_nothing(console: TestClient, path: str,
                                                     data: dict[str, str]) -> None:
    before = _state(console)
    for token in (None, "x" * 43):
        sent = data if token is None else {**data, "csrf": token}
        refused = console.post(path, data=sent, follow_redirects=False)
        assert _problem(_html(refused, 403)).startswith("csrf_token_invalid")
    assert _state(console) == before


@pytest.mark.parametrize(("path", "data"), WRITES)
def test_a_read_only_caller_sees_no_write_controls_and_every_write_is_refused(
        make_client: ClientFactory, path: str, data: dict[str, str]) -> None:
    client = make_client(api_keys=KEY)
    client.post("/v1/tables/register", json={"ddl": ORDERS, "topic": TOPIC},
                headers={"X-API-Key": KEY})
    page = _html(client.get("/console/tables/tidb_shop_orders"))
    assert page.select_one(".access .badge").get_text(strip=True) == "Read-only"
    actions = {f["action"] for f in page.select("form[method=post]")}
    assert actions == {"/console/sign-in"}
    before = _state(client)
    refused = client.post(path, data={**data, "csrf": _csrf(client)}, follow_redirects=False)
    assert _problem(_html(refused, 401)).startswith("unauthorized")
    assert _state(client) == before


def test_signing_in_with_a_key_allows_writes_until_signing_out(make_client: ClientFactory
                                                               ) -> None:
    client = make_client(api_keys=f"other,{KEY}")
    csrf = _csrf(client)
    wrong = client.post("/console/sign-in", data={"csrf": csrf, "key": "guess"})
    assert _problem(_html(wrong, 401)).startswith("unauthorized")
    signed = client.post("/console/sign-in", follow_redirects=False,
                         data={"csrf": csrf, "key": KEY, "back": "/console/settings"})
    assert signed.headers["location"] == "/console/settings?done=signed-in"
    cookie = signed.headers["set-cookie"]
    assert KEY not in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    page = _html(client.get("/console/settings"))
    assert page.select_one("form[action='/console/settings/mode']") is not None
    client.post("/console/settings/mode", data={"csrf": csrf, "mode": "READONLY"})
    assert client.get("/v1/mode").json()["mode"] == "READONLY"
    client.post("/console/sign-out", data={"csrf": csrf})
    refused = client.post("/console/settings/mode", data={"csrf": csrf, "mode": "READWRITE"})
    assert refused.status_code == 401


def test_protected_reads_need_a_sign_in(make_client: ClientFactory) -> None:
    client = make_client(api_keys=KEY, protect_reads=True)
    assert _problem(_html(client.get("/console/"), 401)).startswith("unauthorized")
    assert _html(client.get("/console/", headers={"X-API-Key": KEY})).select_one("table.list")


XSS, IMG = "<script>alert(1)</script>", "<img src=x onerror=alert(1)>"


def test_script_in_docs_names_and_ddl_renders_as_text(client: TestClient) -> None:
    hostile = {"type": "record", "name": "Evil", "namespace": "x", "doc": XSS,
               "fields": [{"name": "a", "type": {"type": "string", "connect.parameters": {
                   "tidb_type": XSS, "allowed": XSS}}, "doc": XSS, "default": XSS}]}
    subject = f"evil{IMG}-value"  # a name cannot hold "/" in a console URL
    registered = client.post(f"/registry/subjects/{subject}/versions",
                             json={"schema": json.dumps(hostile)})
    assert registered.status_code == 200, registered.text
    pages = [client.get("/console/?q=evil"), client.get(f"/console/subjects/{subject}"),
             client.get(f"/console/schemas/{registered.json()['id']}"),
             client.get("/console/ddl", params={"ddl": f"CREATE TABLE t (a INT) COMMENT '{XSS}'"
                                                f"; {XSS}"}),
             client.get("/console/", params={"q": XSS})]
    for response in pages:
        page = BeautifulSoup(response.text, "html.parser")
        assert page.find("script") is None and page.find("img") is None, response.url
        shown = page.get_text() + page.select_one("input#q, textarea#ddl").get(
            "value", "") if page.select_one("input#q") else page.get_text()
        assert XSS in shown or IMG in shown, response.url  # as text, or a field's value
        assert response.headers["content-security-policy"].startswith("default-src 'none'")


def _state(client: TestClient) -> dict[str, Any]:
    return {"subjects": client.get("/v1/subjects?deleted=true", headers={"X-API-Key": KEY}
                                   ).json(),
            "config": client.get("/v1/config", headers={"X-API-Key": KEY}).json(),
            "mode": client.get("/v1/mode", headers={"X-API-Key": KEY}).json(),
            "versions": client.get(f"/v1/subjects/{VALUE}/versions",
                                   headers={"X-API-Key": KEY}).json()}



def test_pasted_messages_decode_with_their_subject_versions(console: TestClient) -> None:
    encoded = console.post("/v1/topics/tidb_shop_orders/encode", json={"records": [
        {"op": "insert", "row": {"id": 7, "sku": "A-7", "price": "1.50", "state": "paid"}},
        {"op": "delete", "row": {"id": 7}}]}).json()["messages"]
    lines = "\n".join(f"{m['key']} {m['value'] or 'null'}" for m in encoded)
    page = _html(console.post("/console/messages", data={"messages": lines}))
    rows = _table(page, "2 message(s)")
    value_id = console.get(f"/v1/subjects/{VALUE}").json()["latest"]["id"]
    assert [r["Operation"] for r in rows] == ["upsert", "delete (tombstone)"]
    assert json.loads(rows[0]["Value"])["sku"] == "A-7"
    assert rows[0]["Value schema"] == f"id {value_id} : {VALUE} v2"
    assert json.loads(rows[1]["Key"]) == {"id": 7} and rows[1]["Value"] == "—"
    bad = _html(console.post("/console/messages", data={"messages": "AAAA"}), 422)
    assert "invalid_messages" in _problem(bad)
    assert bad.select_one(".problem li").get_text().startswith("line 1: message 0 value: ")
    no_broker = _html(console.get("/console/messages?topic=x"), 422)
    assert "FLATAVRO_KAFKA_BOOTSTRAP_SERVERS" in _problem(no_broker)


def test_the_ddl_preview_lists_each_subject_s_changes_against_its_latest_version(
        console: TestClient) -> None:
    script = (ORDERS_V2.replace("id BIGINT PRIMARY KEY", "id BIGINT, sku2 INT NOT NULL DEFAULT 0")
              .replace("qty INT)", "qty BIGINT, PRIMARY KEY (id, sku2))") + ";"
              "ALTER TABLE shop.orders DROP COLUMN note")
    page = _html(console.get("/console/ddl", params={"ddl": script, "topic": TOPIC}))
    value = {r["Column"]: r for r in _table(page, f"Changes to {VALUE} against its version 2")}
    assert value["qty"]["Change"] == "~ type changed"
    assert "int [INT] -> long [BIGINT]" in value["qty"]["What changes"]
    assert value["qty"]["Verdict"] == "✓ compatible"  # int -> long widens
    assert value["note"]["Change"] == "− removed" and value["sku2"]["Change"] == "+ added"
    key = {r["Column"]: r for r in _table(page, f"Changes to {KEY_SUBJECT} against its version 1")}
    assert key["sku2"]["Change"] == "+ added"  # with its default: BACKWARD takes it
    assert "The key schema changes" in page.get_text()


def test_the_ddl_page_writes_the_schemas_of_the_release_line_chosen(
        console: TestClient) -> None:
    """The release-line select (ticdc_release): a nullable column with the text default
    'null' is [T, "null"] for the newest TiCDC, ["null", T] for tiflow v8.5.2-v8.5.7, and
    refused as tiflow v8.3-v8.5.1 refused it; the register form carries the choice."""
    ddl = "CREATE TABLE shop.notes (id INT PRIMARY KEY, note VARCHAR(8) DEFAULT 'null')"
    shown = {}
    for release in ("newest", "tiflow-v8.5.2"):
        page = _html(console.get("/console/ddl", params={"ddl": ddl, "topic": TOPIC,
                                                         "release": release}))
        assert page.select_one("select#release option[selected]").get_text() == release
        shown[release] = {r["Field"]: r for r in _table(page, "The value schema's fields")}
        form = page.select_one("form[action='/console/ddl/register']")
        assert form.select_one("input[name=release]")["value"] == release
    assert shown["newest"]["note"]["Avro type"] != shown["tiflow-v8.5.2"]["note"]["Avro type"]
    assert shown["newest"]["note"]["Avro type"].startswith("string")
    assert shown["tiflow-v8.5.2"]["note"]["Avro type"].startswith("null")
    refused = _html(console.get("/console/ddl", params={"ddl": ddl, "topic": TOPIC,
                                                        "release": "tiflow-v8.3"}), 422)
    assert "note" in _problem(refused)
    unknown = _html(console.get("/console/ddl", params={"ddl": ddl, "topic": TOPIC,
                                                        "release": "v7"}), 422)
    assert "ticdc_release" in _problem(unknown)
