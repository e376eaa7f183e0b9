"""Where ``--format iceberg`` keeps its tables: an Apache Iceberg catalog, given to Spark as the
catalog `CATALOG` (``spark.sql.catalog.flatavro.*``).

By default a JDBC catalog on a SQLite file (``--iceberg-catalog-uri``, default
``<warehouse>/catalog.sqlite``) with its data under ``--iceberg-warehouse`` (a local path or
``s3a://``); PyIceberg's ``SqlCatalog`` reads the same file. Any other catalog Spark's Iceberg
runtime knows (REST, Hive, Glue, Nessie...) comes from ``--catalog-config FILE``: ``key=value``
lines of Spark catalog properties without the ``spark.sql.catalog.<name>.`` prefix (``type=rest``,
``uri=...``, ``warehouse=...``, ``credential=...``). Secrets never reach a log line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from spark_jobs.errors import JobError

__all__ = ["CATALOG", "IcebergCatalog", "SECRET"]

CATALOG = "flatavro"
"""The name of the Spark catalog the jobs' Iceberg tables are in."""

SECRET = re.compile(r"(?i)secret|password|token|credential|access[.-]key|private[.-]key")
"""Catalog properties whose value is never shown."""

_SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
_JDBC = "org.apache.iceberg.jdbc.JdbcCatalog"
_SQLITE = "jdbc:sqlite:"


@dataclass(frozen=True, slots=True)
class IcebergCatalog:
    """The Spark catalog properties of the jobs' Iceberg catalog, and where they came from."""

    properties: tuple[tuple[str, str], ...]
    source: str  # "--iceberg-catalog-uri ..." or "--catalog-config FILE", for errors

    @classmethod
    def sqlite(cls, *, warehouse: str, uri: str | None = None) -> IcebergCatalog:
        """The default: a JDBC catalog on a SQLite file (`uri`, default
        ``jdbc:sqlite:<warehouse>/catalog.sqlite``), tables under `warehouse`.

        Raises:
            JobError: an object-store warehouse without a catalog URI, or a URI that is not
                ``jdbc:...``.
        """
        if uri is None:
            if "://" in warehouse and not warehouse.startswith("file:"):
                raise JobError(f"--iceberg-warehouse {warehouse} is not on this machine: give "
                               f"--iceberg-catalog-uri jdbc:sqlite:/path/catalog.sqlite (a local "
                               f"file), or another catalog with --catalog-config")
            uri = f"{_SQLITE}{Path(warehouse.removeprefix('file:')).absolute()}/catalog.sqlite"
        if not uri.startswith("jdbc:"):
            raise JobError(f"--iceberg-catalog-uri {uri} is not a JDBC URL (jdbc:sqlite:/path "
                           f"for the default catalog; another catalog: --catalog-config FILE)")
        if "://" not in warehouse:
            warehouse = str(Path(warehouse.removeprefix("file:")).absolute())
        return cls((("catalog-impl", _JDBC), ("uri", uri), ("warehouse", warehouse),
                    # The table kind column (Iceberg >= 1.7), so views and tables never mix.
                    ("jdbc.schema-version", "V1")), f"--iceberg-catalog-uri {uri}")

    @classmethod
    def read(cls, path: str) -> IcebergCatalog:
        """A ``--catalog-config`` file: ``key=value`` lines (``#`` comments, blank lines).

        Raises:
            JobError: an unreadable file, a line without ``=``, a ``spark.`` key, no ``type``
                or ``catalog-impl``.
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise JobError(f"--catalog-config {path}: {exc.strerror or exc}") from exc
        properties: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, equals, value = line.partition("=")
            key, value = key.strip(), value.strip()
            if not equals or not key:
                raise JobError(f"--catalog-config {path} line {number}: not key=value")
            if key.startswith("spark."):
                raise JobError(f"--catalog-config {path} line {number}: {key} is a Spark "
                               f"setting; write the catalog property alone (type, uri, "
                               f"warehouse...), without spark.sql.catalog.<name>.")
            properties[key] = value
        if "type" not in properties and "catalog-impl" not in properties:
            raise JobError(f"--catalog-config {path} names no type (rest, hive, glue, hadoop, "
                           f"jdbc...) or catalog-impl")
        return cls(tuple(properties.items()), f"--catalog-config {path}")

    @property
    def uri(self) -> str:
        """What the catalog is, for errors: its URI, else its warehouse, else its type."""
        found = dict(self.properties)
        return found.get("uri") or found.get("warehouse") or found.get("type") or self.source

    @property
    def warehouse(self) -> str | None:
        """Where the catalog's tables live, when given."""
        return dict(self.properties).get("warehouse")

    def sqlite_file(self) -> Path | None:
        """The SQLite file of a ``jdbc:sqlite:`` catalog (None for another)."""
        uri = dict(self.properties).get("uri", "")
        if not uri.startswith(_SQLITE):
            return None
        return Path(uri.removeprefix(_SQLITE).split("?", 1)[0])

    def spark_settings(self) -> dict[str, str]:
        """The Spark settings that define the catalog `CATALOG`."""
        prefix = f"spark.sql.catalog.{CATALOG}"
        return {prefix: _SPARK_CATALOG, **{f"{prefix}.{k}": v for k, v in self.properties}}

    def redacted(self) -> str:
        """The properties for a log line, secrets replaced by ``***``."""
        return ", ".join(f"{k}={'***' if SECRET.search(k) else v}" for k, v in self.properties)
