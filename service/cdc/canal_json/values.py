"""Canal-JSON column values (all JSON strings, NULL as ``null``) -> typed values.

TiCDC writes integers, YEAR, BIT (its unsigned number), ENUM (1-based index) and SET (bit
mask) as decimal strings, FLOAT/DOUBLE without exponents, DECIMAL with its scale, and
binary columns with each byte as the character of the same code point (ISO-8859-1), which
JSON escapes where needed (``\\u0005``, ``\\u003c``). An ENUM/SET value that is not all
digits is taken as member names (official Canal's spelling).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from service.cdc.errors import MessageFormatError
from service.core.mysql_types import TypeFamily
from service.core.table import ColumnType

__all__ = ["typed_row", "typed_value"]


def _integer(text: str) -> int:
    if not text.lstrip("-").isdigit() or not text.isascii():
        raise ValueError("not an integer")
    return int(text)


def _float(text: str) -> float:
    try:
        number = float(text)
    except ValueError as exc:  # Python's text names float(): say it plainly
        raise ValueError("not a number") from exc
    if number != number:
        raise ValueError("not a number")
    if number in (float("inf"), float("-inf")):  # 1e400: out of range, not infinite
        raise ValueError("out of range: beyond ±1.7976931348623157e+308")
    return number


def _binary(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError as exc:
        raise ValueError(f"character {exc.start} (U+{ord(text[exc.start]):04X}) is not a "
                         f"byte in the ISO-8859-1 mapping of binary values") from exc


def _index_or_names(text: str) -> int | str:
    return int(text) if text.isascii() and text.isdigit() else text


_PARSERS: dict[TypeFamily, Callable[[str], Any]] = {
    TypeFamily.INTEGER: _integer, TypeFamily.YEAR: _integer, TypeFamily.BIT: _integer,
    TypeFamily.FLOAT: _float, TypeFamily.DOUBLE: _float, TypeFamily.BLOB: _binary,
    TypeFamily.ENUM: _index_or_names, TypeFamily.SET: _index_or_names,
}


def typed_value(column: str, column_type: ColumnType, *, value: Any, where: str) -> Any:
    """The typed value of one ``data``/``old`` entry (`where` + ``/column`` names it in
    errors, e.g. ``data/0/price``).

    Raises:
        MessageFormatError: not a string (or null), or not a value of the column's type.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise MessageFormatError(
            f"column `{column}`: Canal-JSON values are strings, got {type(value).__name__}",
            column=column, field=f"{where}/{column}")
    parse = _parser(column_type)
    if parse is None:
        return value
    try:
        return parse(value)
    except ValueError as exc:
        raise MessageFormatError(
            f"column `{column}`: {value[:40]!r} is not a valid "
            f"{column_type.base.value.upper()} value ({exc})", column=column,
            field=f"{where}/{column}") from exc


# A table's column types are shared objects (columns.column_type caches them), so the parser
# is looked up by identity: cheaper per value than the type's family. An entry holds its
# type, so an id in the table is never a freed object's.
_BY_TYPE: dict[int, tuple[ColumnType, Callable[[str], Any] | None]] = {}


def _parser(column_type: ColumnType) -> Callable[[str], Any] | None:
    entry = _BY_TYPE.get(id(column_type))
    if entry is None or entry[0] is not column_type:
        if len(_BY_TYPE) >= 4096:
            _BY_TYPE.clear()
        entry = (column_type, _PARSERS.get(column_type.family))
        _BY_TYPE[id(column_type)] = entry
    return entry[1]


def typed_row(row: dict[str, Any], types: dict[str, ColumnType], *, where: str
              ) -> dict[str, Any]:
    """The typed values of one ``data``/``old`` row, `types` holding its columns' types (a
    shared mapping, never modified: its parsers are looked up once).

    Raises:
        MessageFormatError: as `typed_value`, for the first bad value.
    """
    parsers = _row_parsers(types)
    out: dict[str, Any] = {}
    for column, value in row.items():
        if value.__class__ is str:  # nearly every value: parsed here, errors said below
            parse = parsers[column]
            if parse is None:
                out[column] = value
                continue
            try:
                out[column] = parse(value)
                continue
            except ValueError:
                pass
        elif value is None:
            out[column] = None
            continue
        out[column] = typed_value(column, types[column], value=value, where=where)
    return out


_ROW_PARSERS: dict[int, tuple[dict[str, ColumnType],
                              dict[str, Callable[[str], Any] | None]]] = {}


def _row_parsers(types: dict[str, ColumnType]) -> dict[str, Callable[[str], Any] | None]:
    entry = _ROW_PARSERS.get(id(types))
    if entry is None or entry[0] is not types:
        if len(_ROW_PARSERS) >= 1024:
            _ROW_PARSERS.clear()
        entry = (types, {column: _parser(t) for column, t in types.items()})
        _ROW_PARSERS[id(types)] = entry
    return entry[1]
