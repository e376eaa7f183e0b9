"""What the service (API) tests share: a sample table's DDL, an API key, the client factory type."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

ORDERS_DDL = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku VARCHAR(64) NOT NULL, "
              "price DECIMAL(12,2) NOT NULL, created DATETIME(3), note TEXT)")
KEY = "s3cr3t-key"

ClientFactory = Callable[..., TestClient]
