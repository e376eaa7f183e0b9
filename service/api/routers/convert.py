"""``/v1/convert/{protocol}``: TiCDC protocol messages to flat-avro Kafka messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import orjson
from fastapi import APIRouter, Body, Depends, Path
from fastapi.responses import Response

from service.api.body_route import CheckedBodyRoute
from service.api.deps import ClaimChecksDep, MetricsDep, RuntimeDep, may_write, require_read
from service.api.docs.route_docs import problem
from service.api.errors import WriteKeyRequiredError
from service.api.models import CONVERT_EXAMPLES, ConvertRequest, ConvertResponse
from service.cdc.catalog import Protocol
from service.codec.claim_check import ClaimCheckStorageError, shown_uri
from service.codec.convert import ConvertInput

router = APIRouter(route_class=CheckedBodyRoute,
                   dependencies=[Depends(require_read)], responses=problem(401))


@dataclass(frozen=True)
class Conversion:
    """A convert request as the converter takes it: the protocol and the input."""

    protocol: Protocol
    request: ConvertInput


async def conversion(
    protocol: Annotated[Protocol, Path(description="The TiCDC protocol of the messages")],
    body: Annotated[ConvertRequest, Body(openapi_examples=CONVERT_EXAMPLES)], *,
    write: Annotated[bool, Depends(may_write)], claim_checks: ClaimChecksDep,
) -> Conversion:
    """The request, parsed; ``register=true`` needs a write key when keys are configured; a
    claim-check storage must be one the service is configured to read.

    Raises:
        WriteKeyRequiredError: ``register=true`` without a valid key.
        ClaimCheckStorageError: a claim-check storage the service does not read.
    """
    if body.register_ and not write:
        raise WriteKeyRequiredError("register=true registers schemas: it needs an API key "
                                    "(Authorization: Bearer <key> or X-API-Key)")
    uri = body.claim_check_storage_uri
    if uri is not None and uri not in claim_checks:
        raise ClaimCheckStorageError(
            f"claim_check_storage_uri {shown_uri(uri)!r} is not one of the storages this "
            f"service reads (FLATAVRO_CLAIM_CHECK_STORAGE_URIS)",
            field="claim_check_storage_uri")
    return Conversion(protocol, body.to_input())


@router.post("/v1/convert/{protocol}", operation_id="convertMessages", tags=["codec"],
             summary="Convert TiCDC Canal-JSON / Open Protocol / Simple / Debezium messages",
             description=(
                 "TiCDC messages in (consumption order), the flat-avro Kafka messages an "
                 "`avro` changefeed would have written out: INSERT/UPDATE key + value, "
                 "DELETE key + tombstone, key-changing UPDATE DELETE + INSERT, under the "
                 "topic the rule gives. The topic's registered schemas win; with "
                 "`register: true` (an API key when keys are configured) a missing table is "
                 "registered from the message's definition (Simple: exact; Canal-JSON/Open "
                 "Protocol/Debezium: derived, refused when a needed fact such as DECIMAL precision "
                 "is missing). DDL, watermark/resolved and BOOTSTRAP events are listed in "
                 "`skipped`; Simple DML whose schema version is unknown in `pending`. A "
                 "batch converts whole or not at all: 422 lists every message that cannot "
                 "be converted (index, field, column, byte offset)."),
             response_model=ConvertResponse, responses=problem(401, 404, 409, 413, 502, 503))
async def convert(*, asked: Annotated[Conversion, Depends(conversion)], runtime: RuntimeDep,
                  metrics: MetricsDep) -> Response:
    """Convert the messages (registering missing tables when asked and allowed)."""
    result = await runtime.converter.convert(asked.protocol, asked.request)
    metrics.records.labels("convert").inc(len(result["messages"]))
    return Response(orjson.dumps(result), media_type="application/json")
