"""Schema generation and table registration: ``/v1/schemas``, ``/v1/tables``."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from service.api.body_route import CheckedBodyRoute
from service.api.deps import RuntimeDep, require_read, require_write
from service.api.models import (
    SchemasOut,
    TableCheckOut,
    TableInput,
    TableRegistrationOut,
    TopicTableInput,
    check_out,
    problem,
    registration_out,
)
from service.api.table_work import schemas_of, table_of
from service.registry.tables import check_table

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["schemas"], responses=problem(401))
_READ = [Depends(require_read)]


@router.post("/v1/schemas/generate", operation_id="generateSchemas", dependencies=_READ,
             summary="Generate flat-avro key/value schemas",
             description="The key and value schemas TiCDC's `avro` protocol registers for a "
                         "table, from a Simple-protocol TableSchema or a CREATE TABLE. "
                         "Nothing is registered.",
             response_model_by_alias=True)
async def generate(body: TableInput) -> SchemasOut:
    pair = await schemas_of(body)
    return SchemasOut(key_schema=pair.key_schema, value_schema=pair.value_schema,
                      key_columns=list(pair.key_columns))


@router.post("/v1/tables/check", operation_id="checkTable", dependencies=_READ,
             summary="Dry-run a table against the registry",
             description="Checks the table's key and value schemas against what the topic's "
                         "subjects hold, under each subject's compatibility level, and lists "
                         "every incompatibility column by column. Registers nothing.",
             responses=problem(409, 502, 503))
async def check(body: TopicTableInput, runtime: RuntimeDep) -> TableCheckOut:
    return check_out(await check_table(runtime.registry, await table_of(body),
                                       body.options.schema_options(), body.topic))


@router.post("/v1/tables/register", operation_id="registerTable",
             dependencies=[Depends(require_write)],
             summary="Register a table's schemas under its topic",
             description="Registers the key and value schemas (both checked first: an "
                         "incompatible table gets 409 with every incompatibility and nothing "
                         "is registered). Needs an API key when keys are configured.",
             responses=problem(401, 409, 502, 503))
async def register(body: TopicTableInput, runtime: RuntimeDep
                   ) -> TableRegistrationOut:
    return registration_out(await runtime.register_table(
        await table_of(body), body.options.schema_options(), body.topic))
