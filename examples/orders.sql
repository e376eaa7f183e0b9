-- shop.orders, as `flatavro schema generate --ddl examples/orders.sql` reads it.
CREATE TABLE shop.orders (
  id BIGINT PRIMARY KEY,
  sku VARCHAR(64) NOT NULL,
  price DECIMAL(12,2) NOT NULL,
  created DATETIME(3)
);
