"""The stream's checks of its local paths before the JVM starts: a table path that holds
something else than a Delta table, or a checkpoint of another stream, is one line at once
instead of after the ~20 s a Spark session takes to start. The same checks run again through
Hadoop once the session is up (they cover every file system; these, local paths only)."""

from __future__ import annotations

from pathlib import Path

from spark_jobs.errors import JobError, not_a_dead_letter_table, not_a_delta_table
from spark_jobs.jobs.checkpoint_marker import check_checkpoint
from spark_jobs.settings.config import StreamConfig
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.sources.files import Files, local_files

__all__ = ["check_catalog_file", "check_stream_paths"]


def _holds_other_than_delta(files: Files, path: str) -> bool:
    """Something is at `path` and it has no Delta log (local paths)."""
    return files.exists(path, empty_is_absent=True) and not (
        Path(files.qualified(path).removeprefix("file:")) / "_delta_log").is_dir()


def check_stream_paths(config: StreamConfig) -> None:
    """Check the table path, the dead-letter path and the checkpoint when they are local.

    Raises:
        JobError: as the checks after start-up: a path holding something else than a Delta
            table, a checkpoint of another stream or table, or of a table that is gone.
    """
    if config.iceberg is not None:
        check_catalog_file(config.iceberg)
    if config.many or config.named:
        # the tables are known once their schemas are (names: in the catalog)
        files = local_files(config.checkpoint)
        if files is not None:
            check_checkpoint(files, config)
        return
    files = local_files(config.table_path, config.checkpoint)
    if files is None:
        return
    if _holds_other_than_delta(files, config.table_path):
        metadata = Path(files.qualified(config.table_path).removeprefix("file:")) / "metadata"
        raise not_a_delta_table(config.table_path, topic=config.topic,
                                iceberg=any(metadata.glob("*.metadata.json")))
    if config.dead_letter is not None and local_files(config.dead_letter) is not None \
            and _holds_other_than_delta(files, config.dead_letter):
        raise not_a_dead_letter_table(config.dead_letter)
    check_checkpoint(files, config)


def check_catalog_file(catalog: IcebergCatalog) -> None:
    """A SQLite catalog's file can be made: its folder exists (the default file's folder, the
    local warehouse, is made here).

    Raises:
        JobError: the folder of an ``--iceberg-catalog-uri`` file does not exist.
    """
    file = catalog.sqlite_file()
    if file is None:
        return
    warehouse = catalog.warehouse or ""
    if "://" not in warehouse and file.parent == Path(warehouse):
        file.parent.mkdir(parents=True, exist_ok=True)
    if not file.parent.is_dir():
        raise JobError(f"the Iceberg catalog {catalog.uri}: the folder {file.parent} "
                       f"does not exist")
