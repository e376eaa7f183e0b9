"""A table as a request gives it, and what the table endpoints do with it: generate its
schemas, check it against the registry, register it.

Parsing a CREATE TABLE and generating schemas is CPU work: the widest table TiDB allows takes
about half a second, which on the event loop would stall every other request (``/healthz``
included) for as long, so it runs in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.schema import SchemaPair, generate_schemas
from service.core.table import Table
from service.core.table_json import TableSchemaSpec, table_from_spec
from service.registry.tables import TableCheck, TableRegistration, check_table
from service.usecases.runtime import Runtime

__all__ = ["TableSource", "generate_table_schemas", "check_table_schemas",
           "register_table_schemas"]


@dataclass(frozen=True)
class TableSource:
    """A table: a Simple-protocol `TableSchema` (`spec`) or a CREATE TABLE (`ddl`, with the
    `database` of a table name without one), and the schema options to apply."""

    spec: TableSchemaSpec | None = None
    ddl: str | None = None
    database: str | None = None
    options: SchemaOptions = field(default_factory=SchemaOptions)

    def to_table(self) -> Table:
        """The validated table.

        Raises:
            InvalidTableError, InvalidDDLError: the definition is not a usable table.
        """
        if self.spec is not None:
            return table_from_spec(self.spec)
        assert self.ddl is not None
        return table_from_ddl(self.ddl, schema=self.database)


async def generate_table_schemas(source: TableSource) -> SchemaPair:
    """The key and value schemas of the table (nothing is registered), built in a thread."""
    return await anyio.to_thread.run_sync(_schemas, source)


async def check_table_schemas(runtime: Runtime, source: TableSource, *,
                              topic_rule: str) -> TableCheck:
    """Check the table against what its topic's subjects hold, registering nothing."""
    table = await _table(source)
    return await check_table(runtime.registry, table, options=source.options,
                             topic_rule=topic_rule)


async def register_table_schemas(runtime: Runtime, source: TableSource, *,
                                 topic_rule: str) -> TableRegistration:
    """Register the table's key and value schemas under its topic (both checked first)."""
    table = await _table(source)
    return await runtime.register_table(table, source.options, topic_rule=topic_rule)


async def _table(source: TableSource) -> Table:
    return await anyio.to_thread.run_sync(source.to_table)


def _schemas(source: TableSource) -> SchemaPair:
    return generate_schemas(source.to_table(), source.options)
