"""`SchemaResolver`: schema ids and compiled codecs, cached so steady state asks no registry.

Ids are immutable, so a compiled `RecordCodec` per id is kept for the process life (bounded
LRU). A topic's latest ids are reused for `topic_ttl` seconds, and forgotten at once when this
service registers or deletes under the topic, or, given `changes` (the embedded registry's
`StoreChanges.version`), as soon as any process commits to the registry: with several workers
on one SQLite file, none keeps encoding with a version another worker has superseded.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from service.core.lru import LRU
from service.core.naming import SubjectKind, subject_for
from service.core.record_codec import RecordCodec
from service.registry.errors import RegistryError, SchemaNotFoundError, SubjectNotFoundError
from service.registry.interface import SchemaRegistry
from service.registry.model import RegisteredSchema

__all__ = ["SchemaResolver", "TopicSchemas", "BoundSchema"]

_SUBJECTS_WAIT = 2.0
"""Seconds an error message waits for the registry to name an id's subjects."""


@dataclass(frozen=True, slots=True)
class BoundSchema:
    """A registered schema and its compiled codec."""

    registered: RegisteredSchema
    codec: RecordCodec


@dataclass(frozen=True, slots=True)
class TopicSchemas:
    """The latest key (None for a keyless table) and value schemas of a topic."""

    topic: str
    key: BoundSchema | None
    value: BoundSchema


class SchemaResolver:
    """Resolves ids and topics through one registry, with caches."""

    def __init__(self, registry: SchemaRegistry, *, cache_size: int, topic_ttl: float,
                 on_cache_hit: Callable[[], None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic,
                 changes: Callable[[], int] = lambda: 0) -> None:
        self._registry = registry
        self._codecs = LRU(cache_size)
        self._topics: dict[str, tuple[float, int, TopicSchemas]] = {}
        self._ttl, self._clock, self._hit = topic_ttl, clock, on_cache_hit
        self._changes = changes

    async def codec(self, schema_id: int, *, key: bool = False) -> RecordCodec:
        """The codec of a schema id (a key codec reads whole rows).

        Raises:
            SchemaNotFoundError: the registry has no such id.
            NotFlatAvroError: the schema is not a flat-avro record.
        """
        cached: RecordCodec | None = self._codecs.get((schema_id, key))
        if cached is not None:
            self._hit()
            return cached
        text = await self._registry.schema_by_id(schema_id)
        codec = RecordCodec(json.loads(text), allow_extra=key)
        self._codecs.put((schema_id, key), codec)
        return codec

    async def glue_codec(self, glue_id: uuid.UUID, *, key: bool = False
                         ) -> tuple[RegisteredSchema, RecordCodec]:
        """The schema version an AWS Glue frame names, and its codec.

        Raises:
            SchemaNotFoundError: Glue has no such version, or the registry is not Glue's.
            NotFlatAvroError: the schema is not a flat-avro record.
        """
        registered = await self.glue_version(glue_id)
        return registered, await self.codec(registered.id, key=key)

    async def glue_version(self, glue_id: uuid.UUID) -> RegisteredSchema:
        """The AWS Glue schema version of a UUID (the registry remembers it).

        Raises:
            SchemaNotFoundError: Glue has no such version, or the registry is not Glue's.
        """
        version = getattr(self._registry, "glue_version", None)
        if version is None:
            raise SchemaNotFoundError(
                f"the message is AWS Glue-framed (schema version {glue_id}) but the registry "
                f"is not AWS Glue's (FLATAVRO_REGISTRY_URL=glue://<registry name>)",
                glue_schema_version_id=str(glue_id))
        registered: RegisteredSchema = await version(glue_id)
        return registered

    async def subjects_of(self, schema_id: int) -> list[str]:
        """The subjects an id is registered under (soft-deleted ones too), sorted.

        Only error messages use this, so it is not cached, and it answers ``[]`` when the
        registry does not know or does not say within `_SUBJECTS_WAIT` seconds: naming the
        subject must never hide or delay the decode error it decorates.
        """
        try:
            uses = await asyncio.wait_for(self._registry.uses_of(schema_id, deleted=True),
                                          _SUBJECTS_WAIT)
        except (RegistryError, TimeoutError):
            return []
        return sorted({subject for subject, _ in uses})

    async def topic(self, topic: str) -> TopicSchemas:
        """The topic's latest key and value schemas.

        Raises:
            SubjectNotFoundError: nothing is registered under the topic's value subject.
        """
        # Read before fetching: an entry is stamped with the registry's state it may predate.
        stamp = self._changes()
        cached = self._topics.get(topic)
        if cached is not None and cached[1] == stamp and self._clock() - cached[0] < self._ttl:
            self._hit()
            return cached[2]
        value = await self._registry.get_version(subject_for(topic, SubjectKind.VALUE))
        try:
            key: RegisteredSchema | None = await self._registry.get_version(
                subject_for(topic, SubjectKind.KEY))
        except SubjectNotFoundError:
            key = None
        schemas = TopicSchemas(
            topic,
            None if key is None else BoundSchema(key, await self.codec(key.id, key=True)),
            BoundSchema(value, await self.codec(value.id)),
        )
        self._topics[topic] = (self._clock(), stamp, schemas)
        return schemas

    def forget_topic(self, topic: str) -> None:
        """Drop the cached latest ids of `topic` (after a registration or delete)."""
        self._topics.pop(topic, None)

    def forget_subject(self, subject: str) -> None:
        """Drop every cached topic whose key or value subject is `subject`."""
        for topic in [t for t in self._topics
                      if subject in (subject_for(t, SubjectKind.KEY),
                                     subject_for(t, SubjectKind.VALUE))]:
            del self._topics[topic]
