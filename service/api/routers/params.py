"""Path and query parameters more than one router takes, documented once."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

__all__ = ["TopicPath", "SubjectPath", "VersionPath", "VERSION_PATTERN", "VERSION_TEXT",
           "Deleted", "Permanent", "Force"]

VERSION_PATTERN = r"^(latest|-1|[1-9][0-9]*)$"
VERSION_TEXT = ("1, 2, ... up to 2^31-1 (larger: 422 `invalid_version`), or `latest` "
                "(`-1` too)")

TopicPath = Annotated[str, Path(description="The Kafka topic", examples=["tidb_shop_orders"])]
SubjectPath = Annotated[str, Path(examples=["tidb_shop_orders-value"])]
VersionPath = Annotated[str, Path(description=VERSION_TEXT, pattern=VERSION_PATTERN,
                                  examples=["latest"])]
Deleted = Annotated[bool, Query(description="Include soft-deleted entries")]
Permanent = Annotated[bool, Query(description="Hard delete (after a soft delete)")]
Force = Annotated[bool, Query(description="Set IMPORT although subjects exist")]
