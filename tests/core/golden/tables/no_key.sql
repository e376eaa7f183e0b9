-- Neither a primary key nor a NOT NULL unique index: no key schema, the Kafka key is null.
CREATE TABLE shop.no_key (
  id BIGINT AUTO_RANDOM,
  name VARCHAR(20),
  note TEXT NOT NULL,
  UNIQUE KEY uk_id (id),
  KEY idx_name (name)
);
