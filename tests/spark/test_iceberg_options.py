"""The stream's ``--format iceberg`` options, parsed (no JVM): the default JDBC catalog on a
SQLite file, a ``--catalog-config`` file of Spark catalog properties (secrets redacted), and the
options that go with one format only."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.errors import JobError
from spark_jobs.jobs.preflight import check_catalog_file
from spark_jobs.settings.config import TableFormat, parse_stream_args
from spark_jobs.settings.iceberg import CATALOG, IcebergCatalog

ARGV = ["--topic", "t", "--bootstrap-servers", "b:9092", "--registry-url", "http://r",
        "--checkpoint", "c"]


def test_the_default_catalog_is_jdbc_on_a_sqlite_file_in_the_warehouse(tmp_path: Path) -> None:
    config = parse_stream_args([*ARGV, "--table", "shop.items", "--format", "iceberg",
                                "--iceberg-warehouse", str(tmp_path / "lake")])
    assert config.table_format is TableFormat.ICEBERG
    assert config.table_path == "shop.items"
    assert config.iceberg_format_version == 3
    assert config.iceberg is not None
    assert config.iceberg.spark_settings() == {
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        f"spark.sql.catalog.{CATALOG}.uri": f"jdbc:sqlite:{tmp_path}/lake/catalog.sqlite",
        f"spark.sql.catalog.{CATALOG}.warehouse": f"{tmp_path}/lake",
        f"spark.sql.catalog.{CATALOG}.jdbc.schema-version": "V1"}
    assert config.iceberg.sqlite_file() == tmp_path / "lake" / "catalog.sqlite"
    many = parse_stream_args([*ARGV[2:], "--topic-pattern", "tidb_shop_.*", "--format",
                              "iceberg", "--iceberg-warehouse", "s3a://lake/w",
                              "--iceberg-catalog-uri", f"jdbc:sqlite:{tmp_path}/c.sqlite",
                              "--table-template", "{database}.{table}",
                              "--iceberg-format-version", "2"])
    assert many.many and str(many.table_template) == "{database}.{table}"
    assert many.iceberg is not None and many.iceberg.warehouse == "s3a://lake/w"
    assert many.iceberg_format_version == 2


def test_a_catalog_config_file_names_any_catalog_and_hides_its_secrets(tmp_path: Path) -> None:
    file = tmp_path / "rest.properties"
    file.write_text("# a REST catalog\ntype=rest\nuri=https://catalog.example/api\n\n"
                    "credential=client:s3cr3t\nwarehouse=prod\ntoken=abc\n")
    config = parse_stream_args([*ARGV, "--table", "shop.items", "--format", "iceberg",
                                "--catalog-config", str(file)])
    assert config.iceberg is not None
    assert config.iceberg.uri == "https://catalog.example/api"
    assert config.iceberg.spark_settings()[f"spark.sql.catalog.{CATALOG}.type"] == "rest"
    assert config.iceberg.redacted() == ("type=rest, uri=https://catalog.example/api, "
                                         "credential=***, warehouse=prod, token=***")
    assert config.iceberg.sqlite_file() is None


@pytest.mark.parametrize(("text", "message"), [
    ("uri=http://x\n", "names no type (rest, hive, glue, hadoop, jdbc...) or catalog-impl"),
    ("type=rest\nuri\n", "line 2: not key=value"),
    ("spark.sql.catalog.x.type=rest\n", "line 1: spark.sql.catalog.x.type is a Spark setting; "
                                         "write the catalog property alone (type, uri, "
                                         "warehouse...), without spark.sql.catalog.<name>.")])
def test_a_bad_catalog_config_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "c.properties"
    file.write_text(text)
    with pytest.raises(JobError) as caught:
        IcebergCatalog.read(str(file))
    assert str(caught.value) == f"--catalog-config {file} {message}"


@pytest.mark.parametrize(("extra", "message"), [
    (["--format", "iceberg", "--table", "items"],
     "--table 'items' is not an Iceberg table name namespace.table"),
    (["--format", "iceberg", "--table", "shop.items"],
     "--format iceberg needs --iceberg-warehouse PATH (the default catalog) or "
     "--catalog-config FILE"),
    (["--format", "iceberg", "--table", "shop.items", "--iceberg-warehouse", "s3a://b/w"],
     "--iceberg-warehouse s3a://b/w is not on this machine: give --iceberg-catalog-uri"),
    (["--format", "iceberg", "--table", "shop.items", "--iceberg-warehouse", "w",
      "--iceberg-catalog-uri", "sqlite:///x"],
     "--iceberg-catalog-uri sqlite:///x is not a JDBC URL"),
    (["--format", "iceberg", "--table", "shop.items", "--iceberg-warehouse", "w",
      "--deletion-vectors", "on"], "--deletion-vectors is for --format delta"),
    (["--format", "iceberg", "--table", "shop.items", "--iceberg-warehouse", "w",
      "--change-data-feed"], "--change-data-feed is for --format delta"),
    (["--format", "iceberg", "--table", "shop.items", "--iceberg-warehouse", "w",
      "--mode", "permissive", "--dead-letter", "d"], "--mode permissive is for --format delta"),
    (["--format", "iceberg", "--iceberg-warehouse", "w", "--table-template",
      "/lake/{database}/{table}"], "--table-template '/lake/{database}/{table}' does not name "
                                   "Iceberg tables namespace.table"),
    (["--table-path", "p", "--iceberg-warehouse", "w"], "--iceberg-warehouse is for --format "
                                                        "iceberg"),
    (["--format", "parquet", "--table-path", "p"], "argument --format: invalid choice")])
def test_format_mixes_that_cannot_work_exit_2(extra: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_stream_args([*ARGV, *extra])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_sqlite_catalog_in_a_missing_folder_is_named_before_the_jvm(tmp_path: Path) -> None:
    made = IcebergCatalog.sqlite(warehouse=str(tmp_path / "new-lake"))
    check_catalog_file(made)  # the default file's folder is the warehouse: made here
    assert (tmp_path / "new-lake").is_dir()
    elsewhere = IcebergCatalog.sqlite(warehouse=str(tmp_path / "lake"),
                                      uri=f"jdbc:sqlite:{tmp_path}/missing/catalog.sqlite")
    with pytest.raises(JobError) as caught:
        check_catalog_file(elsewhere)
    assert str(caught.value) == (f"the Iceberg catalog jdbc:sqlite:{tmp_path}/missing/"
                                 f"catalog.sqlite: the folder {tmp_path}/missing does not exist")
