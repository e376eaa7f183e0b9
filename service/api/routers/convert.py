"""TiCDC protocol conversion: ``POST /v1/convert/{protocol}``."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Body, Depends, Path
from fastapi.responses import Response

from service.api.body_route import CheckedBodyRoute
from service.api.convert_models import CONVERT_EXAMPLES, ConvertRequest, ConvertResponse
from service.api.deps import RuntimeDep, may_write, require_read
from service.api.models import problem
from service.cdc.catalog import Protocol

router = APIRouter(route_class=CheckedBodyRoute,
                   dependencies=[Depends(require_read)], responses=problem(401))


@router.post("/v1/convert/{protocol}", operation_id="convertMessages", tags=["codec"],
             summary="Convert TiCDC Canal-JSON / Open Protocol / Simple messages to flat-avro",
             description=(
                 "TiCDC messages in (consumption order), the flat-avro Kafka messages an "
                 "`avro` changefeed would have written out: INSERT/UPDATE key + value, "
                 "DELETE key + tombstone, key-changing UPDATE DELETE + INSERT, under the "
                 "topic the rule gives. The topic's registered schemas win; with "
                 "`register: true` (an API key when keys are configured) a missing table is "
                 "registered from the message's definition (Simple: exact; Canal-JSON/Open "
                 "Protocol: derived, refused when a needed fact such as DECIMAL precision "
                 "is missing). DDL, watermark/resolved and BOOTSTRAP events are listed in "
                 "`skipped`; Simple DML whose schema version is unknown in `pending`. A "
                 "batch converts whole or not at all: 422 lists every message that cannot "
                 "be converted (index, field, column, byte offset)."),
             response_model=ConvertResponse, responses=problem(401, 404, 409, 413, 502, 503))
async def convert(
    protocol: Annotated[Protocol, Path(description="The TiCDC protocol of the messages")],
    body: Annotated[ConvertRequest, Body(openapi_examples=CONVERT_EXAMPLES)],
    runtime: RuntimeDep, write: Annotated[bool, Depends(may_write)],
) -> Response:
    result = await runtime.converter.convert(protocol, body.to_input(), may_register=write)
    runtime.metrics.records.labels("convert").inc(len(result["messages"]))
    return Response(orjson.dumps(result), media_type="application/json")
