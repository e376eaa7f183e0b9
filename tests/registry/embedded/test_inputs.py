"""Pure rules of the embedded registry's inputs and version lookup: no store, no socket."""

from __future__ import annotations

import pytest

from service.registry.compatibility import CompatibilityLevel
from service.registry.embedded.inputs import (
    MAX_VERSION,
    check_subject,
    parse_level,
    parse_version,
)
from service.registry.embedded.reads import find_version
from service.registry.embedded.store import VersionRow
from service.registry.errors import (
    InvalidCompatibilityLevelError,
    InvalidSubjectError,
    InvalidVersionError,
    SubjectNotFoundError,
    VersionNotFoundError,
)


@pytest.mark.parametrize(("spec", "number"), [
    ("latest", None), ("LATEST", None), (-1, None), ("-1", None), (1, 1), (" 7 ", 7),
    (MAX_VERSION, MAX_VERSION)])
def test_version_specs(spec: int | str, number: int | None) -> None:
    assert parse_version(spec) == number


@pytest.mark.parametrize("spec", [0, "0", -2, MAX_VERSION + 1, "1.5", "newest", ""])
def test_invalid_version_specs_are_42202(spec: int | str) -> None:
    with pytest.raises(InvalidVersionError) as err:
        parse_version(spec)
    assert err.value.registry_code == 42202


def test_levels_are_read_in_any_case() -> None:
    assert parse_level("full_transitive") is CompatibilityLevel.FULL_TRANSITIVE
    with pytest.raises(InvalidCompatibilityLevelError) as err:
        parse_level("sideways")
    assert err.value.registry_code == 42203


@pytest.mark.parametrize("subject", ["", "a\nb", "tab\there", "del\x7f"])
def test_subjects_with_control_characters_are_42208(subject: str) -> None:
    with pytest.raises(InvalidSubjectError) as err:
        check_subject(subject)
    assert err.value.registry_code == 42208


def test_subjects_may_hold_any_other_character() -> None:
    check_subject("tidb_shop/orders-value ü")


ROWS = [VersionRow((1, 10, "a", True)), VersionRow((2, 11, "b", False)),
        VersionRow((3, 12, "c", True))]


def test_latest_is_the_newest_visible_version() -> None:
    assert find_version("s", ROWS, number=None, deleted=False).version == 2
    assert find_version("s", ROWS, number=None, deleted=True).version == 3
    # a delete of `latest` names the newest live version, even with soft-deleted ones shown
    assert find_version("s", ROWS, number=None, deleted=True, for_delete=True).version == 2


def test_soft_deleted_versions_count_only_when_asked() -> None:
    assert find_version("s", ROWS, number=1, deleted=True).schema_id == 10
    with pytest.raises(VersionNotFoundError):
        find_version("s", ROWS, number=1, deleted=False)


def test_a_subject_without_visible_versions_is_40401() -> None:
    with pytest.raises(SubjectNotFoundError):
        find_version("s", [], number=None, deleted=True)
    with pytest.raises(SubjectNotFoundError):
        find_version("s", [VersionRow((1, 10, "a", True))], number=1, deleted=False)
