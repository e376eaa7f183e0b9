"""The MERGE of a keyed table, whatever its format: its clauses (`clauses`: Kafka order or
TiDB's commit order, hard or soft deletes), each a condition and SQL expressions, given to
Delta's merge builder or rendered as ``MERGE INTO`` SQL (`SqlMerge`, for Iceberg)."""

from __future__ import annotations

from typing import Any

from spark_jobs.decoding.transforms import (
    BOUND,
    BOUND_ROW,
    COMMIT_TS,
    DELETED,
    HAS_DELETE,
    PHYSICAL_SHIFT,
    PHYSICAL_TIME,
    TOMBSTONE,
)

__all__ = ["MergeResult", "SqlMerge", "clauses", "key_on", "values"]


def key_on(keys: list[str]) -> str:
    """A MERGE's condition on the key: each of `keys` equal, null-safe (target ``t``, source
    ``s``; a key column of a TiDB table without a primary key may be null)."""
    return " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)


def values(columns: list[str], *, soft: bool, deleted: str = DELETED) -> dict[str, str]:
    """What an update or insert sets: each column from the source row ``s``; a soft-deletes
    table's `deleted` column (Delta's `DELETED`) false."""
    assigned = {f"`{c}`": f"s.`{c}`" for c in columns if c != deleted}
    if soft:
        assigned[f"`{deleted}`"] = "false"
    return assigned


def clauses(builder: Any, values: dict[str, str], *, ordered: bool, soft: bool,
            deleted: str = DELETED) -> Any:
    """The MERGE's clauses (docs/streaming.md, "Commit order" and "Deletes"), added to
    `builder` (Delta's ``DeltaMergeBuilder`` or a `SqlMerge`): target ``t``, source ``s``;
    `deleted` names a soft-deletes table's flag (Iceberg reserves Delta's `DELETED`).

    In Kafka order the last change per key wins. In commit order the source is
    `transforms.in_commit_order` with `TOMBSTONE`: what the key's deletes removed is known to be
    no newer than ``m``, the highest of the row's commit ts, the tombstone's and the batch's
    `BOUND`. The key ends deleted when the batch deletes it and has no upsert at least that new;
    otherwise its upsert replaces the row only when newer than it, and fills an empty key only
    when no older than ``m``."""
    if not ordered:
        return _offset_clauses(builder, values, soft=soft, deleted=deleted)
    ts = f"`{COMMIT_TS}`"
    m = (f"greatest(coalesce(t.{ts}, -1), coalesce(s.{TOMBSTONE}, -1), "
         f"coalesce(s.{BOUND}, -1))")
    gone = f"(s.{HAS_DELETE} AND (s._op = 'delete' OR s.{ts} < {m}))"
    upsert = f"NOT {gone} AND s._op = 'upsert'"
    empty = f"greatest(coalesce(s.{TOMBSTONE}, -1), coalesce(s.{BOUND}, -1))"
    if not soft:
        return (builder.whenMatchedDelete(gone)
                .whenMatchedUpdate(f"{upsert} AND s.{ts} > coalesce(t.{ts}, -1)", values)
                .whenNotMatchedInsert(f"s._op = 'upsert' AND s.{ts} >= {empty}", values))
    deleted = f"`{deleted}`"
    mark = {deleted: "true", ts: m, f"`{PHYSICAL_TIME}`": f"shiftright({m}, {PHYSICAL_SHIFT})"}
    # A soft-deleted row is its key's tombstone: its commit ts is what the delete removed,
    # which is the batch's upsert before the delete when that is newer than the row.
    back = f"(s.{ts} > t.{ts} OR (t.{deleted} AND s.{ts} >= t.{ts}))"
    removed = {**values, **{c: f"s.{BOUND_ROW}.{c}" for c in values if c != deleted}, **mark}
    tomb = {**removed, ts: f"s.{BOUND}",
            f"`{PHYSICAL_TIME}`": f"shiftright(s.{BOUND}, {PHYSICAL_SHIFT})"}
    return (builder.whenMatchedUpdate(f"{gone} AND s.{BOUND} > coalesce(t.{ts}, -1)", removed)
            .whenMatchedUpdate(f"{gone} AND (NOT t.{deleted} OR {m} > t.{ts})", mark)
            .whenMatchedUpdate(f"{upsert} AND {back}", values)
            .whenNotMatchedInsert(f"s._op = 'upsert' AND s.{ts} >= {empty}", values)
            .whenNotMatchedInsert(f"s.{HAS_DELETE} AND s.{BOUND} IS NOT NULL", tomb))


def _offset_clauses(builder: Any, values: dict[str, str], *, soft: bool, deleted: str) -> Any:
    """Kafka order: the source is the last change per key."""
    if soft:
        builder = builder.whenMatchedUpdate(f"s._op = 'delete' AND NOT t.`{deleted}`",
                                            {f"`{deleted}`": "true"})
    else:
        builder = builder.whenMatchedDelete("s._op = 'delete'")
    return (builder.whenMatchedUpdate("s._op = 'upsert'", values)
            .whenNotMatchedInsert("s._op = 'upsert'", values))


class SqlMerge:
    """`clauses` as ``MERGE INTO`` SQL: the same methods as Delta's merge builder, in the same
    order (the first clause whose condition holds acts, as in Delta)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def whenMatchedDelete(self, condition: str) -> SqlMerge:  # noqa: N802 (Delta's names)
        """WHEN MATCHED AND `condition` THEN DELETE."""
        self.parts.append(f"WHEN MATCHED AND ({condition}) THEN DELETE")
        return self

    def whenMatchedUpdate(self, condition: str, set: dict[str, str]  # noqa: N802, A002
                          ) -> SqlMerge:
        """WHEN MATCHED AND `condition` THEN UPDATE SET column = expression, ..."""
        assigned = ", ".join(f"{c} = {e}" for c, e in set.items())
        self.parts.append(f"WHEN MATCHED AND ({condition}) THEN UPDATE SET {assigned}")
        return self

    def whenNotMatchedInsert(self, condition: str, values: dict[str, str]  # noqa: N802
                             ) -> SqlMerge:
        """WHEN NOT MATCHED AND `condition` THEN INSERT (columns) VALUES (expressions)."""
        self.parts.append(f"WHEN NOT MATCHED AND ({condition}) THEN INSERT "
                          f"({', '.join(values)}) VALUES ({', '.join(values.values())})")
        return self

    def sql(self, *, target: str, source: str, on: str) -> str:
        """The statement: MERGE INTO `target` t USING `source` s ON `on` ..."""
        return "\n".join([f"MERGE INTO {target} t USING {source} s ON {on}", *self.parts])


class MergeResult:
    """`clauses` evaluated as a query instead of a MERGE: the same methods as Delta's merge
    builder, recorded, then `rows` gives the table the MERGE would leave, row for row, without
    writing (the fresh read: `spark_jobs.fresh`). The first clause whose condition holds acts,
    as in Delta; a matched row no clause takes stays as it was, an unmatched source row no
    clause takes stays out."""

    def __init__(self) -> None:
        self.matched: list[tuple[str, dict[str, str] | None]] = []  # None: delete
        self.inserts: list[tuple[str, dict[str, str]]] = []

    def whenMatchedDelete(self, condition: str) -> MergeResult:  # noqa: N802 (Delta's names)
        """WHEN MATCHED AND `condition` THEN DELETE."""
        self.matched.append((condition, None))
        return self

    def whenMatchedUpdate(self, condition: str, set: dict[str, str]  # noqa: N802, A002
                          ) -> MergeResult:
        """WHEN MATCHED AND `condition` THEN UPDATE SET ..."""
        self.matched.append((condition, set))
        return self

    def whenNotMatchedInsert(self, condition: str, values: dict[str, str]  # noqa: N802
                             ) -> MergeResult:
        """WHEN NOT MATCHED AND `condition` THEN INSERT ..."""
        self.inserts.append((condition, values))
        return self

    def rows(self, target: Any, source: Any, *, on: str, columns: list[str]) -> Any:
        """The rows of `target` (a DataFrame with `columns`) after the MERGE of `source` ON
        `on` (target ``t``, source ``s``)."""
        from pyspark.sql import functions as F

        joined = target.withColumn(_HERE, F.lit(True)).alias("t").join(
            source.withColumn(_HERE, F.lit(True)).alias("s"), F.expr(on), "full_outer")
        keep = _case([(c, "false" if s is None else "true") for c, s in self.matched],
                     [(c, "true") for c, _ in self.inserts], otherwise="true", absent="false")
        picked = []
        for name in columns:
            quoted = f"`{name}`"
            value = _case([(c, (s or {}).get(quoted, f"t.{quoted}")) for c, s in self.matched],
                          [(c, v.get(quoted, "NULL")) for c, v in self.inserts],
                          otherwise=f"t.{quoted}", absent="NULL")
            picked.append(F.expr(value).alias(name))
        return joined.where(F.expr(keep)).select(*picked)


_HERE = "_flatavro_here"
"""`MergeResult.rows`: a column true on each side of the join (null: no row on that side)."""


def _case(matched: list[tuple[str, str]], inserted: list[tuple[str, str]], *, otherwise: str,
          absent: str) -> str:
    """A column of `MergeResult.rows`: when target and source match, the first of `matched`
    (condition, value) that holds, else `otherwise` (the target's); when only the source has
    the key, the first of `inserted` that holds, else `absent`; the target alone: `otherwise`."""
    both, source_only = f"t.{_HERE} AND s.{_HERE}", f"s.{_HERE} AND t.{_HERE} IS NULL"
    arms = []
    if matched:
        arms.append(f"WHEN {both} THEN CASE "
                    + " ".join(f"WHEN ({c}) THEN {v}" for c, v in matched)
                    + f" ELSE {otherwise} END")
    if inserted:
        arms.append(f"WHEN {source_only} THEN CASE "
                    + " ".join(f"WHEN ({c}) THEN {v}" for c, v in inserted)
                    + f" ELSE {absent} END")
    else:
        arms.append(f"WHEN {source_only} THEN {absent}")
    return f"CASE {' '.join(arms)} ELSE {otherwise} END"
