"""TiCDC's other protocols (Canal-JSON, Open Protocol, Simple, Debezium) as `ChangeEvent`s."""
