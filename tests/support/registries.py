"""What the external-registry suite shares: `Names`, a table and its topic distinct per test."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Names:
    """A table (`shop_N`.`orders`) and its topic, distinct per test."""

    schema: str
    table: str = "orders"

    @property
    def topic(self) -> str:
        return f"tidb_{self.schema}_{self.table}"

    @property
    def key_subject(self) -> str:
        return f"{self.topic}-key"

    @property
    def value_subject(self) -> str:
        return f"{self.topic}-value"

    def ddl(self, columns: str = "") -> str:
        return (f"CREATE TABLE {self.schema}.{self.table} (id BIGINT PRIMARY KEY, sku "
                f"VARCHAR(64) NOT NULL, price DECIMAL(12,2) NOT NULL, created DATETIME(3)"
                f"{columns})")
