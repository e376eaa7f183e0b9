"""Open Protocol column values: Go-quoted binary strings, the two generations, type codes."""

from __future__ import annotations

import pytest

from service.cdc.errors import MessageFormatError
from service.cdc.open_protocol.values import go_unquote, typed_value


def test_go_unquote_reads_the_seed_example_and_every_escape() -> None:
    assert go_unquote(r"\x89PNG\r\n\x1a\n") == b"\x89PNG\r\n\x1a\n"
    assert go_unquote(r"\a\b\f\v\t\\\"\'\101\u00e9\U0001F600ü") == (
        b"\x07\x08\x0c\x0b\t\\\"'A" + "é😀ü".encode())


@pytest.mark.parametrize("text", ["\\", r"\x8", r"\q", r"\400", r"\ud800"])
def test_go_unquote_refuses_bad_escapes(text: str) -> None:
    with pytest.raises(ValueError):
        go_unquote(text)


def test_generations_are_told_apart_by_the_flags_key() -> None:
    # no `f`: base64 (seed log lines)
    assert typed_value("v", 15, flags=None, value="YWE=") == b"aa"
    assert typed_value("v", 15, flags=64, value="YWE=") == "YWE="  # `f`, not binary: UTF-8 text
    assert typed_value("v", 15, flags=65, value=r"a\x00") == b"a\x00"  # `f`, binary: Go-quoted
    # TEXT: base64 + UTF-8
    assert typed_value("v", 252, flags=64, value="5rWL6K+VdGV4dA==") == "测试text"
    assert typed_value("v", 252, flags=65, value="AAE=") == b"\x00\x01"  # BLOB: base64


@pytest.mark.parametrize(("code", "value"), [(99, None), (99, 1), (255, "x"), (6, 1),
                                             (3, "1"), (4, "x"), (15, 5), (252, "%%")])
def test_bad_codes_and_values_name_the_column(code: int, value: object) -> None:
    with pytest.raises(MessageFormatError) as caught:
        typed_value("c", code, flags=64, value=value)
    assert caught.value.details["column"] == "c"
