"""`TableTracker`: tables as the DDL events of a Canal-JSON, Open Protocol or Debezium topic
define them.

TiCDC writes a table's ``CREATE TABLE`` and every later ``ALTER`` into the topic, in order with
the rows. A converter that follows them (`service.core.alter.apply_ddl`) knows each row's exact
table — NOT NULL columns, defaults, column order, a key made of a unique index — where a row
alone only implies one. A row of a followed table gets that exact definition, whose version is
the commit ts of the DDL that made it, so a new version is registered at the first row after an
``ALTER`` as TiCDC's avro sink registers it.

A DDL event at or below the commit ts already applied for its table is a replay (a batch that
was converted, then not committed, is read again) and changes nothing; a replayed row gets the
definition that was current at its commit ts (the tracker keeps the last `HISTORY` versions
of each table). A statement this module does not follow
(partitioning, or an ``ALTER`` of a table it has no definition of) makes the tracker forget the
table: its rows fall back to the definitions they imply, until a ``CREATE TABLE`` is seen
again. A statement that does not parse or contradicts the definition is an error of its
message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from service.cdc.definition import TableDefinition
from service.cdc.events import ChangeEvent
from service.core.alter import DDLChange, UnfollowedDDLError, apply_ddl

__all__ = ["TableTracker", "Followed", "HISTORY"]

HISTORY = 32
"""Versions kept per table, for rows read again after their table changed."""

_NO_MESSAGE = "a DDL event produces no flat-avro message"


@dataclass(frozen=True, slots=True)
class Followed:
    """A followed table: its definition and the commit ts of the DDL that made it."""

    definition: TableDefinition
    commit_ts: int


class TableTracker:
    """The followed tables of one converter, by (schema, table)."""

    def __init__(self, tables: dict[tuple[str, str], tuple[Followed, ...]] | None = None
                 ) -> None:
        self._tables = dict(tables or {})  # versions of each table, oldest first

    def copy(self) -> TableTracker:
        """A copy to change while a batch converts (kept only when the batch converts)."""
        return TableTracker(self._tables)

    def definition(self, schema: str | None, table: str | None, *, commit_ts: int
                   ) -> TableDefinition | None:
        """The exact definition of a followed table for a row committed at `commit_ts` (the
        newest version made before it), None if the table is not followed."""
        for followed in reversed(self._tables.get((schema or "", table or ""), ())):
            if followed.commit_ts < commit_ts:
                return followed.definition
        return None

    def _latest(self, name: tuple[str, str]) -> Followed | None:
        versions = self._tables.get(name)
        return versions[-1] if versions else None

    def _add(self, name: tuple[str, str], followed: Followed) -> None:
        self._tables[name] = (*self._tables.get(name, ())[-(HISTORY - 1):], followed)

    def apply(self, event: ChangeEvent) -> str:
        """Apply a DDL event; returns what it did, in words (for the skipped entry).

        Raises:
            UnappliedDDLError: the statement does not parse or contradicts the table's
                definition (the message cannot be converted: the bridge stops at it or
                dead-letters it; the table is left as it was).
            InvalidTableError, ...: the statement makes a table that is not valid.
        """
        if not event.query or not event.schema:
            return _NO_MESSAGE
        name = (event.schema, event.table or "")
        followed = self._latest(name)
        if followed is not None and event.commit_ts <= followed.commit_ts:
            return f"{_NO_MESSAGE} (already applied)"
        current = None if followed is None else followed.definition.exact_table
        try:
            outcome = apply_ddl(current, event.query, schema=event.schema, table=event.table)
        except UnfollowedDDLError as exc:
            self._tables.pop(name, None)
            return f"{_NO_MESSAGE}; {exc.message}; rows of the table now use the definitions " \
                "they imply"
        if outcome.change is DDLChange.DROPPED:
            self._tables.pop(name, None)
            return f"{_NO_MESSAGE}; the table is dropped"
        if outcome.table is None:  # a statement that changes nothing, of a table not followed
            return _NO_MESSAGE
        if outcome.renamed_from is not None:
            self._tables.pop(outcome.renamed_from, None)
            self._tables.pop(name, None)
        table = outcome.table
        key = (table.schema, table.table)
        previous = self._latest(key)
        if outcome.change is DDLChange.UNCHANGED and previous is not None:
            self._add(key, Followed(previous.definition, event.commit_ts))
            return f"{_NO_MESSAGE}; the Avro schema is unchanged"
        definition = dataclasses.replace(
            TableDefinition.of_table(table, f"the {outcome.change.value} DDL event's "
                                            "statement"), version=event.commit_ts)
        self._add(key, Followed(definition, event.commit_ts))
        return f"{_NO_MESSAGE}; the table's definition follows it ({outcome.change.value})"
