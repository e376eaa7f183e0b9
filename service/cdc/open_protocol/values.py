"""Open Protocol column values (``{"t": code, "h": bool, "f": flags, "v": value}``) -> typed.

Two generations of TiCDC wrote these objects, told apart by the ``f`` (flags) key:

- Without ``f`` (TiCDC before v4.0.5; the seed's example log lines): every string-family
  value (CHAR/VARCHAR/VARBINARY 15/253/254 and the TEXT/BLOB family 249-252) is base64 of
  the raw bytes, and there are no flags.
- With ``f`` (v4.0.5 and later; the seed's type table): CHAR/VARCHAR are UTF-8 text, and when
  the binary flag is set their bytes are written as the body of Go's ``strconv.Quote``
  (``\\x89PNG\\r\\n``); the TEXT/BLOB family stays base64, and is text unless binary.

Integers, YEAR, BIT (as its unsigned number), ENUM (1-based index) and SET (bit mask) are JSON
integers; FLOAT/DOUBLE JSON numbers; DECIMAL, temporal, JSON and VECTOR strings.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from service.cdc.errors import MessageFormatError

__all__ = ["BINARY_FLAG", "TEXT_CODES", "BLOB_CODES", "typed_value", "go_unquote"]

BINARY_FLAG = 0x01
TEXT_CODES = frozenset({15, 253, 254})
BLOB_CODES = frozenset({249, 250, 251, 252})
_INT_CODES = frozenset({1, 2, 3, 8, 9, 13, 16, 247, 248})
_FLOAT_CODES = frozenset({4, 5})
_STRING_CODES = frozenset({7, 10, 11, 12, 14, 225, 245, 246})
_NULL_CODE = 6  # a NULL-typed column: only ever null
_KNOWN_CODES = _INT_CODES | _FLOAT_CODES | _STRING_CODES | TEXT_CODES | BLOB_CODES | {
    _NULL_CODE}


def typed_value(column: str, code: int, *, flags: int | None, value: Any) -> Any:
    """The typed value of one column object (`flags` None for the generation without ``f``).

    Raises:
        MessageFormatError: the value is not what its type code says (the error names the
            column and the code).
    """
    if code not in _KNOWN_CODES:
        raise MessageFormatError(f"column `{column}`: unknown column type code {code}",
                                 column=column, field=f"{column}/t")
    if value is None:
        return None
    if code in _INT_CODES:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _bad(column, code, expected="an integer", value=value)
    if code in _FLOAT_CODES:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _bad(column, code, expected="a number", value=value)
    if not isinstance(value, str):
        raise _bad(column, code, expected="a string", value=value)
    if code in _STRING_CODES:
        return value
    if code in TEXT_CODES or code in BLOB_CODES:
        return _string_family(column, code, flags=flags, value=value)
    raise MessageFormatError(f"column `{column}`: type code {code} (NULL) with a value",
                             column=column, field=f"{column}/v")


def _string_family(column: str, code: int, *, flags: int | None, value: str) -> Any:
    if flags is None or code in BLOB_CODES:
        raw = _base64(column, value)
        if flags is None or flags & BINARY_FLAG:
            return raw
        return _utf8(column, raw)
    if flags & BINARY_FLAG:
        try:
            return go_unquote(value)
        except ValueError as exc:
            raise MessageFormatError(f"column `{column}`: bad escaped binary string ({exc})",
                                     column=column, field=f"{column}/v") from exc
    return value


def _base64(column: str, value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:  # ValueError: non-ASCII text
        raise MessageFormatError(f"column `{column}`: the value is not base64 ({exc})",
                                 column=column, field=f"{column}/v") from exc


def _utf8(column: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageFormatError(
            f"column `{column}`: a text value that is not UTF-8 (byte {exc.start})",
            column=column, field=f"{column}/v") from exc


def _bad(column: str, code: int, *, expected: str, value: Any) -> MessageFormatError:
    return MessageFormatError(
        f"column `{column}`: type code {code} needs {expected}, got {type(value).__name__}",
        column=column, field=f"{column}/v")


_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
                   "\\": 92, "'": 39, '"': 34}


def go_unquote(text: str) -> bytes:
    """The bytes of a Go ``strconv.Quote`` body (the text between the quotes).

    Raises:
        ValueError: a dangling or unknown escape.
    """
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "\\":
            j = text.find("\\", i)
            j = n if j < 0 else j
            out += text[i:j].encode("utf-8")
            i = j
            continue
        if i + 1 >= n:
            raise ValueError(f"a lone backslash at character {i}")
        kind = text[i + 1]
        if kind in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[kind])
            i += 2
        elif kind in _HEX_ESCAPES:
            width, emit = _HEX_ESCAPES[kind]
            digits = text[i + 2:i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"a bad \\{kind} escape at character {i}")
            out += emit(int(digits, 16))
            i += 2 + width
        elif kind in "01234567":
            digits = text[i + 1:i + 4]
            if len(digits) != 3 or not all(c in "01234567" for c in digits) \
                    or int(digits, 8) > 255:
                raise ValueError(f"a bad octal escape at character {i}")
            out.append(int(digits, 8))
            i += 4
        else:
            raise ValueError(f"an unknown escape \\{kind} at character {i}")
    return bytes(out)


def _rune(code: int) -> bytes:
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        raise ValueError(f"U+{code:X} is not a valid rune")
    return chr(code).encode("utf-8")


_HEX_ESCAPES: dict[str, tuple[int, Callable[[int], bytes]]] = {
    "x": (2, lambda v: bytes([v])), "u": (4, _rune), "U": (8, _rune)}
