-- No primary key: the key is the NOT NULL unique index with the fewest columns (ties: the
-- first declared); a nullable unique index never qualifies.
CREATE TABLE shop.unique_key_only (
  a INT NULL,
  b BIGINT NOT NULL,
  c VARCHAR(10) NOT NULL,
  d DATETIME,
  UNIQUE KEY uk_a (a),
  UNIQUE KEY uk_bc (b, c),
  UNIQUE KEY uk_c (c),
  UNIQUE KEY uk_b (b)
);
