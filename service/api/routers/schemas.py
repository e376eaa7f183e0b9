"""``/v1/schemas``: generate a table's flat-avro schemas, and read a schema by its global id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from service.api.body_route import CheckedBodyRoute
from service.api.deps import READ, RuntimeDep
from service.api.docs.route_docs import problem
from service.api.models import SchemaByIdOut, SchemasOut, TableInput
from service.api.routers.params import Deleted
from service.usecases.subject_overview import schema_uses
from service.usecases.tables import generate_table_schemas

router = APIRouter(route_class=CheckedBodyRoute)


@router.post("/v1/schemas/generate", operation_id="generateSchemas", tags=["schemas"],
             dependencies=READ, responses=problem(401),
             summary="Generate flat-avro key/value schemas",
             description="The key and value schemas TiCDC's `avro` protocol registers for a "
                         "table, from a Simple-protocol TableSchema or a CREATE TABLE. "
                         "Nothing is registered.",
             response_model_by_alias=True)
async def generate(body: TableInput) -> SchemasOut:
    """Generate the table's key and value schemas."""
    return SchemasOut.of(await generate_table_schemas(body.to_source()))


@router.get("/v1/schemas/{schema_id:int}", operation_id="getSchemaById",
            tags=["registry-admin"], dependencies=READ, responses=problem(401, 404, 502, 503),
            summary="A schema by its global id",
            description="The schema as JSON and as the registry's exact string, and every "
                        "subject version that uses the id (soft-deleted ones too with "
                        "`deleted=true`).", response_model_by_alias=True)
async def schema_by_id(
        schema_id: Annotated[int, Path(ge=1, le=2**31 - 1, examples=[1],
                                       description="The global schema id")],
        *, runtime: RuntimeDep, deleted: Deleted = False) -> SchemaByIdOut:
    """Read the schema with that id and the subject versions using it."""
    return SchemaByIdOut.of(await schema_uses(runtime.registry, schema_id, deleted=deleted))
