"""``/v1/topics/{topic}``: a topic's schemas, encoding rows for it, deleting its subjects.

Encode bodies are read as bytes and parsed with orjson (no per-record models), and answered
with pre-serialized JSON; their models only document them (`documented_body`), and
`served_by` skips FastAPI's dependency solving on this hot path.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from service.api.body_route import CheckedBodyRoute, served_by
from service.api.deps import READ, WRITE, RuntimeDep, metrics_of, runtime_of
from service.api.docs.route_docs import documented_body, problem
from service.api.models import EncodeRequest, EncodeResponse, TopicDeletedOut, TopicSchemasOut
from service.api.routers.params import Permanent, TopicPath
from service.codec.encode import encode_batch
from service.usecases.topic_deletion import delete_topic

router = APIRouter(route_class=CheckedBodyRoute)


@router.get("/v1/topics/{topic}/schemas", operation_id="getTopicSchemas", tags=["topics"],
            dependencies=READ, summary="A topic's latest key and value schemas",
            description="The latest registered key (null for a keyless table) and value "
                        "schemas of the topic's subjects (TopicNameStrategy).",
            responses=problem(401) | problem(404, 502, 503))
async def topic_schemas(topic: TopicPath, runtime: RuntimeDep) -> TopicSchemasOut:
    """Read the topic's latest key and value schemas."""
    return TopicSchemasOut.of(await runtime.resolver.topic(topic))


async def _encode(request: Request) -> Response:
    done = await encode_batch(runtime_of(request).resolver, request.path_params["topic"],
                              body=await request.body())
    metrics_of(request).records.labels("encode").inc(done.records)
    return Response(done.body, media_type="application/json")


@router.post("/v1/topics/{topic}/encode", operation_id="encodeRecords", tags=["codec"],
             dependencies=READ,
             summary="Encode a batch of changes into Kafka messages",
             description="Rows in plain JSON -> Confluent-framed key and value per record, "
                         "against the topic's latest registered schemas. INSERT/UPDATE give "
                         "key + value, DELETE key + null value, an UPDATE whose key changed "
                         "(with `old_row`) DELETE + INSERT. One bad record fails the batch "
                         "with every bad record's index, column and reason.",
             response_model=EncodeResponse, openapi_extra=documented_body(EncodeRequest),
             responses=problem(401) | problem(404, 413, 422, 502, 503))
@served_by(_encode)
async def encode(*, topic: TopicPath, request: Request, runtime: RuntimeDep) -> Response:
    """Document the operation; `_encode` serves it."""
    return await _encode(request)


@router.delete("/v1/topics/{topic}", operation_id="deleteTopic", tags=["registry-admin"],
               dependencies=WRITE, responses=problem(401, 404, 502, 503),
               summary="Delete a topic's key and value subjects",
               description="Soft-deletes `{topic}-key` and `{topic}-value` (whichever have "
                           "live versions; 404 when the topic has neither subject); with "
                           "`permanent=true`, hard-deletes them once both were soft-deleted. "
                           "Both subjects are checked before either is deleted.")
async def delete_topic_subjects(topic: TopicPath, *, runtime: RuntimeDep,
                                permanent: Permanent = False) -> TopicDeletedOut:
    """Delete the topic's key and value subjects, both checked first."""
    return TopicDeletedOut.of(await delete_topic(runtime, topic, permanent=permanent))
