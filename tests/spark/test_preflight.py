"""The stream's checks of local paths before the JVM starts (no JVM here): the same refusals
as after start-up, for a table path, a dead-letter path and a checkpoint on the local disk;
paths on other file systems are left to the checks through Hadoop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_jobs.errors import JobError
from spark_jobs.jobs.checkpoint_marker import CHECKPOINT_MARKER, check_checkpoint
from spark_jobs.jobs.preflight import check_stream_paths
from spark_jobs.settings.config import StreamConfig, parse_stream_args
from spark_jobs.sources.files import LocalFiles, local_files, same_location


def config(tmp_path: Path, *extra: str, topic: str = "orders") -> StreamConfig:
    return parse_stream_args([
        "--topic", topic, "--bootstrap-servers", "127.0.0.1:9", "--registry-url", "http://r",
        "--table-path", str(tmp_path / "table"), "--checkpoint", str(tmp_path / "ckpt"),
        *extra])


def claimed(tmp_path: Path, *, topic: str = "orders", table: str | None = None,
            commits: bool = False) -> None:
    """A checkpoint as the stream leaves it (the marker as Hadoop writes it)."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / CHECKPOINT_MARKER).write_text(json.dumps(
        {"topic": topic, "table": table or f"file:{tmp_path / 'table'}", "id": "abc"}))
    if commits:
        (tmp_path / "ckpt" / "commits").mkdir()
        (tmp_path / "ckpt" / "commits" / "0").write_text("v1\n")


def test_fresh_paths_and_empty_folders_pass(tmp_path: Path) -> None:
    check_stream_paths(config(tmp_path))
    (tmp_path / "table").mkdir()
    (tmp_path / "ckpt").mkdir()
    check_stream_paths(config(tmp_path))


def test_a_table_path_that_holds_something_else(tmp_path: Path) -> None:
    (tmp_path / "table").mkdir()
    (tmp_path / "table" / "data.csv").write_text("id\n1\n")
    with pytest.raises(JobError, match=r"table exists and is not a Delta table: give "
                                       r"--table-path a new path or an existing Delta table "
                                       r"of topic orders"):
        check_stream_paths(config(tmp_path))
    (tmp_path / "table" / "_delta_log").mkdir()
    check_stream_paths(config(tmp_path))  # a Delta table: checked through Delta later


def test_a_dead_letter_path_that_holds_something_else(tmp_path: Path) -> None:
    (tmp_path / "dead").write_text("not a table")
    with pytest.raises(JobError, match=r"the dead-letter path .*dead exists and is not a "
                                       r"Delta table"):
        check_stream_paths(config(tmp_path, "--mode", "permissive",
                                  "--dead-letter", str(tmp_path / "dead")))


def test_a_checkpoint_not_written_by_the_job(tmp_path: Path) -> None:
    (tmp_path / "ckpt" / "offsets").mkdir(parents=True)
    (tmp_path / "ckpt" / "offsets" / "0").write_text("v1\n")
    with pytest.raises(JobError, match=f"no {CHECKPOINT_MARKER}.*new --checkpoint"):
        check_stream_paths(config(tmp_path))


def test_a_checkpoint_of_another_topic_or_table(tmp_path: Path) -> None:
    claimed(tmp_path, topic="payments")
    with pytest.raises(JobError, match="belongs to the stream of topic payments, not orders"):
        check_stream_paths(config(tmp_path))
    (tmp_path / "ckpt" / CHECKPOINT_MARKER).write_text(json.dumps(
        {"topic": "orders", "table": "file:/elsewhere", "id": "abc"}))
    with pytest.raises(JobError, match=f"belongs to the stream into file:/elsewhere, not "
                                       f"file:{tmp_path}/table: give each table its own "):
        check_stream_paths(config(tmp_path))


def _fields(c: StreamConfig) -> dict[str, object]:
    return {n: getattr(c, n) for n in StreamConfig.__slots__}


def test_the_stream_s_own_checkpoint_passes_whatever_the_spelling(tmp_path: Path) -> None:
    claimed(tmp_path)
    assert check_checkpoint(LocalFiles(), config(tmp_path)) == "abc"
    claimed_as = config(tmp_path)
    for spelling in (f"file://{tmp_path}/table", f"{tmp_path}/table/", f"file:{tmp_path}/table"):
        assert check_checkpoint(LocalFiles(), StreamConfig(**{
            **_fields(claimed_as), "table_path": spelling})) == "abc"


def test_a_checkpoint_whose_table_is_gone(tmp_path: Path) -> None:
    claimed(tmp_path, commits=True)
    with pytest.raises(JobError, match="has applied batches to .*table, which no longer "
                                       "exists"):
        check_stream_paths(config(tmp_path))


def test_paths_on_other_file_systems_are_left_to_hadoop(tmp_path: Path) -> None:
    assert local_files("s3a://bucket/table", str(tmp_path)) is None
    assert local_files("/t", "file:/c") is not None
    check_stream_paths(parse_stream_args([
        "--topic", "t", "--bootstrap-servers", "b:9", "--registry-url", "http://r",
        "--table-path", "s3a://bucket/table", "--checkpoint", "s3a://bucket/ckpt"]))


def test_same_location() -> None:
    assert same_location("file:/t/a", "/t/a/")
    assert same_location("file:///t/a", "file:/t/b/../a")
    assert not same_location("file:/t/a", "file:/t/b")
    assert same_location("s3a://b/t/", "s3a://b/t")
    assert not same_location("s3a://b/t", "file:/b/t")
