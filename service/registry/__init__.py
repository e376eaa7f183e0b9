"""The registry layer: the `SchemaRegistry` interface, compatibility checks, and implementations."""
