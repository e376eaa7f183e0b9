"""The embedded Confluent-compatible registry: SQLite storage and the registry rules on top."""
