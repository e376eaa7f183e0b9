"""The streaming job's marker in its checkpoint (``flatavro-stream.json``): which topic and
table the checkpoint belongs to and the stream's id, Delta's app id for idempotent writes."""

from __future__ import annotations

import json
import uuid

from pyspark.sql import SparkSession

from spark_jobs import sources
from spark_jobs.config import StreamConfig
from spark_jobs.errors import JobError

__all__ = ["CHECKPOINT_MARKER", "claim_checkpoint"]

CHECKPOINT_MARKER = "flatavro-stream.json"
"""Written into the checkpoint on first use: the topic, the table and the stream's id."""


def claim_checkpoint(spark: SparkSession, config: StreamConfig) -> str:
    """The stream's id (Delta's app id for idempotent writes) from the checkpoint's marker,
    written on first use.

    Raises:
        JobError: the checkpoint belongs to another topic or table, was not written by this
            job, or has applied batches to a table that is gone.
    """
    marker = f"{config.checkpoint.rstrip('/')}/{CHECKPOINT_MARKER}"
    table = sources.qualified(spark, config.table_path)
    text = sources.read_text(spark, marker)
    if text is None:
        if sources.path_exists(spark, config.checkpoint, empty_is_absent=True):
            raise JobError(f"the checkpoint {config.checkpoint} was not written by this job "
                           f"(no {CHECKPOINT_MARKER}): give the stream a new --checkpoint")
        stream_id = uuid.uuid4().hex
        sources.write_text(spark, marker, text=json.dumps(
            {"topic": config.topic, "table": table, "id": stream_id}))
        return f"flatavro-stream-{stream_id}"
    claimed = json.loads(text)
    if claimed["topic"] != config.topic:
        raise JobError(f"the checkpoint {config.checkpoint} belongs to the stream of topic "
                       f"{claimed['topic']}, not {config.topic}: give each stream its own "
                       f"--checkpoint")
    if claimed["table"] != table:
        raise JobError(f"the checkpoint {config.checkpoint} belongs to the stream into "
                       f"{claimed['table']}, not {table}: give each table its own "
                       f"--checkpoint")
    if not sources.path_exists(spark, config.table_path, empty_is_absent=True) and \
            sources.path_exists(spark, f"{config.checkpoint.rstrip('/')}/commits",
                                empty_is_absent=True):
        raise JobError(f"the checkpoint {config.checkpoint} has applied batches to "
                       f"{config.table_path}, which no longer exists; to rebuild the table "
                       f"from the topic, give the stream a new --checkpoint")
    return f"flatavro-stream-{claimed['id']}"
