"""``/v1/tables``: check a table against the registry, and register it."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.body_route import CheckedBodyRoute
from service.api.deps import READ, WRITE, RuntimeDep
from service.api.docs.route_docs import problem
from service.api.models import TableCheckOut, TableRegistrationOut, TopicTableInput
from service.usecases.tables import check_table_schemas, register_table_schemas

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["schemas"], responses=problem(401))


@router.post("/v1/tables/check", operation_id="checkTable", dependencies=READ,
             summary="Dry-run a table against the registry",
             description="Checks the table's key and value schemas against what the topic's "
                         "subjects hold, under each subject's compatibility level, and lists "
                         "every incompatibility column by column. Registers nothing.",
             responses=problem(409, 502, 503))
async def check(body: TopicTableInput, runtime: RuntimeDep) -> TableCheckOut:
    """Check the table's schemas against its topic's subjects."""
    return TableCheckOut.of(
        await check_table_schemas(runtime, body.to_source(), topic_rule=body.topic))


@router.post("/v1/tables/register", operation_id="registerTable", dependencies=WRITE,
             summary="Register a table's schemas under its topic",
             description="Registers the key and value schemas (both checked first: an "
                         "incompatible table gets 409 with every incompatibility and nothing "
                         "is registered). Needs an API key when keys are configured.",
             responses=problem(401, 409, 502, 503))
async def register(body: TopicTableInput, runtime: RuntimeDep) -> TableRegistrationOut:
    """Register the table's schemas under its topic."""
    return TableRegistrationOut.of(
        await register_table_schemas(runtime, body.to_source(), topic_rule=body.topic))
