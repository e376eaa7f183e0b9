"""Rewrite the golden schema files from the current generator (review the diff before committing).

Run: .venv/bin/python -m tests.core.golden.regenerate
"""

from __future__ import annotations

from tests.core.golden.cases import GOLDEN_DIR, OPTION_CASES, TABLES, expected_path, generate


def main() -> None:
    for table in TABLES:
        for label, options in OPTION_CASES.items():
            pair = generate(table, options, source="table.json")
            for kind in ("key", "value"):
                path = expected_path(table, label, kind)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(pair[kind] + "\n", encoding="utf-8")
    print(f"golden files written under {GOLDEN_DIR}")


if __name__ == "__main__":
    main()
