"""The whole-database options, parsed (no JVM): one topic, a list or a pattern; a table path or a
template (and the dead-letter template with it); ``--parallel-tables``; each bad combination
one line, exit 2."""

from __future__ import annotations

import json

import pytest

from spark_jobs.decoding.schemas import SubjectVersions
from spark_jobs.settings.config import DEFAULT_PARALLEL_TABLES, parse_args, parse_stream_args
from spark_jobs.settings.tables import PathTemplate, Topics

COMMON = ["--bootstrap-servers", "b:9092", "--registry-url", "http://r", "--checkpoint", "c"]
TEMPLATE = ["--table-path-template", "/lake/{database}/{table}"]
FOR_ONE = "--table-path and --table-name are for one --topic"


def test_one_topic_keeps_its_path_and_many_take_the_template() -> None:
    one = parse_stream_args([*COMMON, "--topic", "t", "--table-path", "p"])
    assert (one.many, one.subscription(), one.parallel_tables) == (
        False, Topics(names=("t",)), DEFAULT_PARALLEL_TABLES)
    assert one.table_for(topic="t", database="shop", table="x") == "p"
    listed = parse_stream_args([*COMMON, "--topics", "a, b", *TEMPLATE,
                                "--parallel-tables", "8"])
    assert listed.many and listed.subscription().spark_option() == ("subscribe", "a,b")
    assert listed.parallel_tables == 8
    assert listed.table_for(topic="a", database="shop", table="orders") == "/lake/shop/orders"
    pattern = parse_stream_args([*COMMON, "--topic-pattern", "tidb_shop_.*", *TEMPLATE])
    assert pattern.subscription().spark_option() == ("subscribePattern", "tidb_shop_.*")
    single_template = parse_stream_args([*COMMON, "--topic", "t", *TEMPLATE])
    assert single_template.many and single_template.subscription() == Topics(names=("t",))


def test_names_in_the_session_catalog_go_where_the_paths_would() -> None:
    one = parse_stream_args([*COMMON, "--topic", "t", "--table-name", "spark_catalog.shop.t"])
    assert (one.named, one.many, one.catalog_names) == (True, False, True)
    assert one.table_for(topic="t", database="x", table="y") == "spark_catalog.shop.t"
    many = parse_stream_args([*COMMON, "--topic-pattern", "tidb_.*", "--table-name-template",
                              "{database}.{table}"])
    assert many.named and many.many
    assert many.table_for(topic="a", database="shop", table="orders") == "shop.orders"
    paths = parse_stream_args([*COMMON, "--topics", "a,b", *TEMPLATE])
    assert not paths.named and not paths.catalog_names
    # messages about a template name the option the user gave
    assert (many.template_option, paths.template_option) == (
        "--table-name-template", "--table-path-template")


def test_permissive_many_takes_a_dead_letter_template() -> None:
    config = parse_stream_args([*COMMON, "--topics", "a,b", *TEMPLATE, "--mode", "permissive",
                                "--dead-letter", "/dead/{topic}"])
    assert config.dead_letter_for(topic="a", database="shop", table="o") == "/dead/a"


@pytest.mark.parametrize(("argv", "message"), [
    (["--topics", "a,b", "--table-path", "p"], FOR_ONE),
    (["--topic-pattern", "x", "--table-path", "p"], FOR_ONE),
    (["--topics", "a,b", "--table-name", "shop.t"], FOR_ONE),
    (["--topic", "t", "--topics", "a", *TEMPLATE], "not allowed with argument --topic"),
    (["--topics", "a,b"], "one of the arguments --table-path/--table --table-path-template/"
                          "--table-template --table-name --table-name-template is required"),
    (["--topic", "t", "--table-name", "t"], "--table-name 't' is not a table name database.table"),
    (["--topic", "t", "--table-name", "a.b.c.d"], "'a.b.c.d' is not a table name"),
    (["--topic", "t", "--table-name", "shop.t", "--table-path", "p"], "not allowed with"),
    (["--topics", "a,b", "--table-name-template", "/lake/{database}/{table}"],
     "--table-name-template '/lake/{database}/{table}' does not name tables database.table"),
    (["--topics", "a,b", "--table-name-template", "{table}"], "does not name tables"),
    (["--topics", "a,b", "--table-name-template", "shop.{table}", "--format", "iceberg",
      "--iceberg-warehouse", "w"], "--table-name-template is for --format delta"),
    (["--topics", "a,,b", *TEMPLATE], "'' is not a Kafka topic name"),
    (["--topics", "a,a", *TEMPLATE], "topic a is listed twice"),
    (["--topics", "a b", *TEMPLATE], "'a b' is not a Kafka topic name"),
    (["--topic-pattern", "tidb_(", *TEMPLATE], "'tidb_(' is not a regular expression"),
    (["--topics", "a,b", "--table-path-template", "/lake/{database}"],
     "names neither {table} nor {topic}"),
    (["--topics", "a,b", "--table-path-template", "/lake/{schema}/{table}"],
     "names {schema}; a template may name {database}, {table}, {topic}"),
    (["--topics", "a,b", "--table-path-template", "/lake/{table"], "--table-path-template"),
    (["--topics", "a,b", *TEMPLATE, "--mode", "permissive", "--dead-letter", "/dead"],
     "--dead-letter (a template, as --table-path-template) '/dead' names neither"),
    (["--topics", "a,b", *TEMPLATE, "--parallel-tables", "0"], "'0' is not a positive"),
])
def test_bad_combinations_exit_2_in_one_line(argv: list[str], message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_stream_args([*COMMON, *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_database_and_table_come_from_the_value_schema_as_ticdc_names_it() -> None:
    def subject(namespace: str | None) -> SubjectVersions:
        record = {"type": "record", "name": "order_items", "fields": []}
        if namespace is not None:
            record["namespace"] = namespace
        return SubjectVersions("x-value", json.dumps(record), 1, {})

    # tidb_my_shop_order_items cannot be split back: the schema says where the _ is.
    assert subject("default.my_shop").table_name() == ("my_shop", "order_items")
    assert subject("default").table_name() == ("", "order_items")
    assert subject(None).table_name() == ("", "order_items")
    template = PathTemplate.parse("s3a://lake/{database}/{table}", option="--t")
    assert template.render(topic="tidb_my_shop_order_items", database="my_shop",
                           table="order_items") == "s3a://lake/my_shop/order_items"
    assert template.uses("database") and not template.uses("topic")


def test_bulk_read_takes_topics_with_an_output_template(
        capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--bootstrap-servers", "b:9092", "--registry-url", "http://r"]
    config = parse_args([*base, "--topic-pattern", "tidb_shop_.*", "--output",
                         "/lake/{database}/{table}", "--format", "delta"])
    assert config.many and config.subscription().spark_option() == (
        "subscribePattern", "tidb_shop_.*")
    assert config.output_template == PathTemplate("/lake/{database}/{table}")
    one = parse_args([*base, "--topic", "t", "--output", "/out/{x}"])  # one topic: a path
    assert not one.many and one.output == "/out/{x}"
    with pytest.raises(SystemExit) as exited:
        parse_args([*base, "--topics", "a,b", "--output", "/out"])
    assert exited.value.code == 2
    assert "--output (a template with --topics or --topic-pattern) '/out' names neither" in (
        capsys.readouterr().err)


BULK = ["--bootstrap-servers", "b:9092", "--registry-url", "http://r"]


def test_bulk_read_names_delta_tables_in_the_session_catalog_with_in_catalog() -> None:
    one = parse_args([*BULK, "--topic", "t", "--output", "shop.items", "--format", "delta",
                      "--in-catalog"])
    assert one.in_catalog and one.output == "shop.items"
    many = parse_args([*BULK, "--topics", "a,b", "--output", "copy.{topic}", "--format",
                       "delta", "--in-catalog"])
    assert many.in_catalog and many.output_template == PathTemplate("copy.{topic}")
    assert not parse_args([*BULK, "--topic", "t", "--output", "/o", "--format",
                           "delta"]).in_catalog


@pytest.mark.parametrize(("argv", "message"), [
    (["--topic", "t", "--output", "shop.items", "--in-catalog"],
     "--in-catalog is for --format delta"),
    (["--topic", "t", "--output", "/lake/items", "--format", "delta", "--in-catalog"],
     "--output '/lake/items' is not a table name database.table"),
    (["--topics", "a,b", "--output", "/lake/{topic}", "--format", "delta", "--in-catalog"],
     "--output '/lake/{topic}' does not name tables database.table"),
])
def test_bulk_read_in_catalog_refusals_are_one_line(argv: list[str], message: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args([*BULK, *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
