"""The table endpoints' CPU work, DDL parsing and schema generation, in a worker thread.

The widest table TiDB allows takes about half a second to parse; run on the event loop, that
would stall every other request (``/healthz`` included) for as long.
"""

from __future__ import annotations

import anyio

from service.api.models import TableInput
from service.core.schema import SchemaPair, generate_schemas
from service.core.table import Table

__all__ = ["table_of", "schemas_of"]


async def table_of(body: TableInput) -> Table:
    """The validated table of a request body (see `TableInput.to_table`), built in a thread."""
    return await anyio.to_thread.run_sync(body.to_table)


async def schemas_of(body: TableInput) -> SchemaPair:
    """The key and value schemas of a request body's table, built in a thread."""
    return await anyio.to_thread.run_sync(_schemas, body)


def _schemas(body: TableInput) -> SchemaPair:
    return generate_schemas(body.to_table(), body.options.schema_options())
