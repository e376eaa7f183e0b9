"""Where rows go: the Delta table (schema, evolution, MERGE by key, idempotent writes, deletion
vectors and OPTIMIZE) and Parquet written whole or not at all."""
