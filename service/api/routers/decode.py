"""``/v1/decode``: Kafka messages (Confluent-framed) back into rows.

Bodies are read as bytes and parsed with orjson (no per-message models), and answered with
pre-serialized JSON; the request model only documents them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from service.api.body_route import CheckedBodyRoute, media_type
from service.api.deps import READ, MetricsDep, RuntimeDep
from service.api.docs.route_docs import documented_body, problem
from service.api.models import DecodeRequest, DecodeResponse
from service.codec.decode import decode_batch, decode_raw

router = APIRouter(route_class=CheckedBodyRoute)


@router.post("/v1/decode", operation_id="decodeMessages", tags=["codec"], dependencies=READ,
             summary="Decode Kafka messages into rows",
             description="Confluent-framed key/value pairs (base64 or hex) -> plain-JSON "
                         "rows; a null value is a delete. Or one raw framed message as "
                         "`application/octet-stream` (`part` says key or value). Every bad "
                         "message is reported with its index, part and byte offset.",
             response_model=DecodeResponse,
             openapi_extra=documented_body(DecodeRequest, "application/octet-stream"),
             responses=problem(401) | problem(413, 422, 502, 503))
async def decode(*, request: Request, runtime: RuntimeDep, metrics: MetricsDep,
                 part: Annotated[str, Query(pattern="^(key|value)$",
                                            description="Raw bodies: key or value")] = "value"
                 ) -> Response:
    """Decode a batch of messages (JSON), or one raw message (octet-stream)."""
    if media_type(request) == "application/octet-stream":
        done = await decode_raw(runtime.resolver, await request.body(), key=part == "key")
    else:
        done = await decode_batch(runtime.resolver, await request.body())
    metrics.records.labels("decode").inc(done.messages)
    return Response(done.body, media_type="application/json")
