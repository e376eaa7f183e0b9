"""Topics and the codec: ``/v1/topics/{topic}/schemas``, ``/encode`` and ``/v1/decode``.

Encode and decode bodies are read as bytes and parsed with orjson (no per-record models), and
answered with pre-serialized JSON; their models only document them (`documented_body`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from service.api.body_route import CheckedBodyRoute, media_type, served_by
from service.api.deps import RuntimeDep, require_read, runtime_of
from service.api.models import (
    DecodeRequest,
    DecodeResponse,
    EncodeRequest,
    EncodeResponse,
    TopicSchemasOut,
    problem,
    registered_schema_out,
)
from service.codec.decode import decode_batch, decode_raw
from service.codec.encode import encode_batch

router = APIRouter(route_class=CheckedBodyRoute,
                   dependencies=[Depends(require_read)], responses=problem(401))
TopicPath = Annotated[str, Path(description="The Kafka topic", examples=["tidb_shop_orders"])]


def documented_body(model: type[Any], *media: str) -> dict[str, Any]:
    """`openapi_extra` describing a raw body with `model`'s schema (added to components)."""
    ref = {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
    content: dict[str, Any] = {"application/json": ref}
    content.update({m: {"schema": {"type": "string", "format": "binary"}} for m in media})
    return {"requestBody": {"required": True, "content": content},
            "x-documented-models": [model.__name__]}


def _json(body: bytes) -> Response:
    return Response(body, media_type="application/json")


@router.get("/v1/topics/{topic}/schemas", operation_id="getTopicSchemas", tags=["topics"],
            summary="A topic's latest key and value schemas",
            description="The latest registered key (null for a keyless table) and value "
                        "schemas of the topic's subjects (TopicNameStrategy).",
            responses=problem(404, 502, 503))
async def topic_schemas(topic: TopicPath, runtime: RuntimeDep) -> TopicSchemasOut:
    found = await runtime.resolver.topic(topic)
    return TopicSchemasOut(
        topic=topic, key=None if found.key is None else registered_schema_out(
            found.key.registered), value=registered_schema_out(found.value.registered))


async def _encode(request: Request) -> Response:
    runtime = runtime_of(request)
    done = await encode_batch(runtime.resolver, request.path_params["topic"],
                              await request.body())
    runtime.metrics.records.labels("encode").inc(done.records)
    return _json(done.body)


@router.post("/v1/topics/{topic}/encode", operation_id="encodeRecords", tags=["codec"],
             summary="Encode a batch of changes into Kafka messages",
             description="Rows in plain JSON -> Confluent-framed key and value per record, "
                         "against the topic's latest registered schemas. INSERT/UPDATE give "
                         "key + value, DELETE key + null value, an UPDATE whose key changed "
                         "(with `old_row`) DELETE + INSERT. One bad record fails the batch "
                         "with every bad record's index, column and reason.",
             response_model=EncodeResponse, openapi_extra=documented_body(EncodeRequest),
             responses=problem(404, 413, 422, 502, 503))
@served_by(_encode)
async def encode(topic: TopicPath, request: Request, runtime: RuntimeDep) -> Response:
    return await _encode(request)  # documents the operation; `_encode` serves it


@router.post("/v1/decode", operation_id="decodeMessages", tags=["codec"],
             summary="Decode Kafka messages into rows",
             description="Confluent-framed key/value pairs (base64 or hex) -> plain-JSON "
                         "rows; a null value is a delete. Or one raw framed message as "
                         "`application/octet-stream` (`part` says key or value). Every bad "
                         "message is reported with its index, part and byte offset.",
             response_model=DecodeResponse,
             openapi_extra=documented_body(DecodeRequest, "application/octet-stream"),
             responses=problem(413, 422, 502, 503))
async def decode(request: Request, runtime: RuntimeDep,
                 part: Annotated[str, Query(pattern="^(key|value)$",
                                            description="Raw bodies: key or value")] = "value"
                 ) -> Response:
    if media_type(request) == "application/octet-stream":
        done = await decode_raw(runtime.resolver, await request.body(), key=part == "key")
    else:
        done = await decode_batch(runtime.resolver, await request.body())
    runtime.metrics.records.labels("decode").inc(done.messages)
    return _json(done.body)
