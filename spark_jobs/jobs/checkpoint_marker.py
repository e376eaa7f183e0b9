"""The streaming job's marker in its checkpoint (``flatavro-stream.json``): which topic and
table the checkpoint belongs to and the stream's id, Delta's app id for idempotent writes.

`check_checkpoint` reads it through any `Files` back end: the job runs it on local paths
before the JVM starts (a wrong ``--checkpoint`` is one line at once), and again through Hadoop
when it claims the checkpoint."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_jobs.errors import JobError
from spark_jobs.settings.config import StreamConfig, TableFormat
from spark_jobs.sources.files import Files, HadoopFiles, same_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CHECKPOINT_MARKER", "Claim", "check_checkpoint", "claim_checkpoint"]

CHECKPOINT_MARKER = "flatavro-stream.json"
"""Written into the checkpoint on first use: the topic, the table and the stream's id."""


def _marker(config: StreamConfig) -> str:
    return f"{config.checkpoint.rstrip('/')}/{CHECKPOINT_MARKER}"


def _claim(files: Files, config: StreamConfig) -> dict[str, str]:
    """What the marker says of `config`'s stream: its topic and table, or in whole-database
    mode its topics and table template."""
    if config.many:
        return {"topics": str(config.subscription()), "tables": str(config.table_template)}
    if config.named:  # a name in a catalog, not a path
        catalog = "iceberg" if config.table_format is TableFormat.ICEBERG else "catalog"
        return {"topic": config.topic, "table": f"{catalog}:{config.table_path}"}
    return {"topic": config.topic, "table": files.qualified(config.table_path)}


def check_checkpoint(files: Files, config: StreamConfig) -> str | None:
    """The stream's id from the checkpoint's marker, None for a checkpoint not used yet.

    Raises:
        JobError: the checkpoint belongs to another topic or table (or other topics or
            another template), was not written by this job, or has applied batches to a table
            that is gone.
    """
    text = files.read_text(_marker(config))
    if text is None:
        if files.exists(config.checkpoint, empty_is_absent=True):
            raise JobError(f"the checkpoint {config.checkpoint} was not written by this job "
                           f"(no {CHECKPOINT_MARKER}): give the stream a new --checkpoint")
        return None
    claimed, want = json.loads(text), _claim(files, config)
    topics = claimed.get("topic", claimed.get("topics"))
    wanted_topics = want.get("topic", want.get("topics"))
    if topics != wanted_topics:
        raise JobError(f"the checkpoint {config.checkpoint} belongs to the stream of "
                       f"{_topics(claimed)}, not {wanted_topics}: give each stream its own "
                       f"--checkpoint (Spark cannot change a checkpoint's subscription)")
    if config.many:
        if claimed["tables"] != want["tables"]:
            raise JobError(f"the checkpoint {config.checkpoint} belongs to the stream into "
                           f"{claimed['tables']}, not {want['tables']}: give each table "
                           f"template its own --checkpoint")
        return str(claimed["id"])
    if not same_location(claimed["table"], want["table"]):
        raise JobError(f"the checkpoint {config.checkpoint} belongs to the stream into "
                       f"{claimed['table']}, not {want['table']}: give "
                       f"each table its own --checkpoint")
    if config.named:
        return str(claimed["id"])
    if not files.exists(config.table_path, empty_is_absent=True) and files.exists(
            f"{config.checkpoint.rstrip('/')}/commits", empty_is_absent=True):
        raise JobError(f"the checkpoint {config.checkpoint} has applied batches to "
                       f"{config.table_path}, which no longer exists; to rebuild the table "
                       f"from the topic, give the stream a new --checkpoint")
    return str(claimed["id"])


def _topics(claim: dict[str, str]) -> str:
    return f"topic {claim['topic']}" if "topic" in claim else claim["topics"]


@dataclass(frozen=True, slots=True)
class Claim:
    """The stream's id, and whether its checkpoint has no marker yet."""

    stream_id: str
    new: bool

    @property
    def app_id(self) -> str:
        """Delta's app id for the stream's idempotent writes (``flatavro-stream-<id>``)."""
        return f"flatavro-stream-{self.stream_id}"

    def write(self, spark: SparkSession, config: StreamConfig) -> None:
        """Write the marker into a new checkpoint (once the start has passed every check)."""
        if self.new:
            files = HadoopFiles(spark)
            files.write_text(_marker(config), text=json.dumps(
                {**_claim(files, config), "id": self.stream_id}))


def claim_checkpoint(spark: SparkSession, config: StreamConfig) -> Claim:
    """The stream's id from the checkpoint's marker, or a new one for an unused checkpoint
    (`Claim.write` writes its marker).

    Raises:
        JobError: as `check_checkpoint`.
    """
    stream_id = check_checkpoint(HadoopFiles(spark), config)
    if stream_id is None:
        return Claim(uuid.uuid4().hex, new=True)
    return Claim(stream_id, new=False)
